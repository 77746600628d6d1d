"""Training: the position `probe` and linear classifiers, `bpe` tokenizers, MLM pre-training (`masked_lm`), GLUE `finetune` with `calibration` losses."""
