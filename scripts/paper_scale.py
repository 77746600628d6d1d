"""What the paper profile costs: chapter 05's pre-training and chapter 13's fine-tuning grid in FLOPs and estimated
GPU-hours, and the pre-training throughput measured on this machine (book/paper_scale.md prints its output):

    BOOK_DATA_DIR=../shared/data python -m scripts.paper_scale [--sustained-tflops 100] [--steps 40]

FLOPs: 6 · parameters · tokens (forward and backward through the weights) + 12 · layers · width · sequence · tokens
(attention scores), per training token. GPU-hours divide them by an assumed sustained throughput (default 100 TFLOP/s:
about a third of an A100's bf16 peak); they are estimates, not measurements. Model sizes come from each model's
configuration on the hub when online, else from transformers' default configuration of its architecture.
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time
from pathlib import Path

import torch
from transformers import AutoConfig, AutoModel, BertConfig, DistilBertConfig, RobertaConfig

from lib.core.profiles import chapter_parameters
from lib.datasets.tasks import glue
from lib.experiments.pretraining import pretraining_runs
from lib.train import masked_lm

DEFAULTS = {"bert": BertConfig, "roberta": RobertaConfig, "distilbert": DistilBertConfig}


def size(config) -> tuple[int, int, int]:
    """(parameters, layers, width) of a model built from config on the meta device (no memory, no download)."""
    with torch.device("meta"):
        model = AutoModel.from_config(config)
    layers = getattr(config, "num_hidden_layers", None) or config.n_layers
    width = getattr(config, "hidden_size", None) or config.dim
    return sum(p.numel() for p in model.parameters()), layers, width


def hub_config(spec: str):
    try:
        return AutoConfig.from_pretrained(spec), "hub"
    except OSError:
        family = next(k for k in sorted(DEFAULTS, key=len, reverse=True) if spec.startswith(k))
        return DEFAULTS[family](), f"transformers' default {family} configuration"


def flops(params: int, layers: int, width: int, seq: int, tokens: float) -> float:
    return 6 * params * tokens + 12 * layers * width * seq * tokens


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sustained-tflops", type=float, default=100.0)
    parser.add_argument("--steps", type=int, default=200, help="steps of the default edition's pre-training to time here")
    args = parser.parse_args()
    rate = args.sustained_tflops * 1e12

    print("## Chapter 05: pre-training (paper profile)\n")
    _, configs = pretraining_runs(chapter_parameters("05_pretraining", "paper"))
    cfg = next(iter(configs.values()))
    roberta = RobertaConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.hidden_size,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        intermediate_size=cfg.intermediate_size,
        max_position_embeddings=cfg.seq_len + 2,
        type_vocab_size=1,
    )
    n, layers, width = size(roberta)
    tokens = cfg.steps * cfg.batch_size * cfg.seq_len
    per_run = flops(n, layers, width, cfg.seq_len, tokens)
    print(f"{len(configs)} runs, each {n / 1e6:.0f}M parameters")
    print(f"  {cfg.steps:,} steps × {cfg.batch_size} × {cfg.seq_len} tokens = {tokens / 1e9:.1f}B tokens")
    print(f"FLOPs per run {per_run:.2e}")
    print(f"estimated {per_run / rate / 3600:,.0f} GPU-hours per run, {len(configs) * per_run / rate / 3600:,.0f} for the chapter\n")

    print("## Chapter 13: the fine-tuning grid (paper profile)\n")
    p13 = chapter_parameters("13_isotropy_calibration", "paper")
    tasks = [t.strip() for t in p13["tasks"].split(",")]
    methods, seeds = p13["methods"].split(","), int(p13["seeds"])
    examples = {t: min(len(glue(t, "train")), int(p13["n_train"])) for t in tasks}
    epochs = {t: int(p13["epochs_small"]) if t in ("mrpc", "wnli") else int(p13["epochs"]) for t in tasks}
    total = 0.0
    for spec in p13["models"].split(","):
        config, source = hub_config(spec)
        n, layers, width = size(config)
        seq = int(p13["max_length"])
        model_flops = sum(flops(n, layers, width, seq, examples[t] * seq * epochs[t]) for t in tasks) * len(methods) * seeds
        total += model_flops
        grid = f"{len(tasks)} tasks × {len(methods)} methods × {seeds} seeds"
        print(f"{spec}: {n / 1e6:.0f}M parameters ({source})")
        print(f"  {grid}: FLOPs ≤ {model_flops:.2e}, ≤ {model_flops / rate / 3600:,.1f} GPU-hours")
    print(f"examples per task (full training sets, at most {p13['max_length']} tokens each):")
    print("  " + ", ".join(f"{t} {k:,}" for t, k in examples.items()))
    print(f"the grid: ≤ {total / rate / 3600:,.1f} GPU-hours")
    print("  (every example counted at max_length; calibration terms not counted)\n")

    print("## Measured here: the default edition's pre-training step\n")
    _, configs = pretraining_runs(chapter_parameters("05_pretraining", "default"))
    base = dataclasses.replace(next(iter(configs.values())), steps=args.steps, warmup=1, eval_every=10**9)
    tokenizer, blocks, valid = masked_lm.prepare_corpus(base)  # the book's corpus and tokenizer, as chapter 05 trains on them
    model = masked_lm.build_model(base, tokenizer)
    n, layers, width = sum(p.numel() for p in model.parameters()), base.layers, base.hidden_size
    with tempfile.TemporaryDirectory() as scratch:
        start = time.perf_counter()
        masked_lm.train(dataclasses.replace(base, eval_every=args.steps), tokenizer, blocks, valid, track_blocks=1, checkpoint_dir=Path(scratch), desc="timing")
        seconds = time.perf_counter() - start
    tokens = args.steps * base.batch_size * base.seq_len
    achieved = flops(n, layers, width, base.seq_len, tokens) / seconds
    shape = f"{args.steps} steps of {base.batch_size} × {base.seq_len} tokens"
    print(f"{n / 1e6:.2f}M parameters, {shape}")
    print(f"in {seconds:.1f} s on {torch.get_num_threads()} CPU threads:")
    print(f"{args.steps / seconds:.1f} steps/s, {tokens / seconds:,.0f} tokens/s, {achieved / 1e9:.1f} GFLOP/s")
    print("  (sustained, evaluation included)")
    print(f"the paper's pre-training at this rate: {per_run / achieved / 86400 / 365:,.0f} years per run")


if __name__ == "__main__":
    main()
