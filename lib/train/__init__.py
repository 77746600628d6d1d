"""Training: the position `probe` and linear classifiers, `bpe` tokenizers, MLM `pretrain`, GLUE `finetune` with `calibration` losses."""
