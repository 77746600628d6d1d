"""Compare pre-training configurations on this machine (chapter 05's choice of default): learning per minute, and
whether the model with position embeddings passes the phase transition (its perplexity leaving the bag-of-words
plateau of the model without them) on every seed, not only on a lucky one.

For each configuration and seed: train with position embeddings (and, with `--pairs`, without) for `--steps` steps,
or for about `--minutes` of wall time (20 steps are timed first), evaluating six times. Prints each curve (step,
minutes, validation perplexity) and a summary with steps/s and the final perplexities beside the unigram one. Every
run uses lib.train.masked_lm unchanged, so the numbers are what chapter 05 would get. Usage:
    python scripts/pretrain_configs.py [--minutes 5 | --steps 3000] [--only A,E] [--seeds 0,1,2] [--pairs]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from lib.errors import cli
from lib.train import masked_lm

COMMON = dict(
    corpus="book",
    valid_share=0.02,
    weight_decay=0.01,
    adam_betas=(0.9, 0.98),
    adam_eps=1e-6,
    grad_clip=1.0,
    mask_prob=0.15,
    precision="none",  # float32 steps, as chapter 05 trains
)
CONFIGS = {
    "A 2x128 seq64": dict(vocab_size=4096, hidden_size=128, layers=2, heads=2, intermediate_size=512, seq_len=64, batch_size=32, lr=2e-3, dropout=0.1),
    "B 4x128 seq64": dict(vocab_size=4096, hidden_size=128, layers=4, heads=4, intermediate_size=512, seq_len=64, batch_size=32, lr=2e-3, dropout=0.1),
    "C 2x256 seq64": dict(vocab_size=4096, hidden_size=256, layers=2, heads=4, intermediate_size=1024, seq_len=64, batch_size=32, lr=1e-3, dropout=0.1),
    "D 4x256 seq128": dict(vocab_size=8192, hidden_size=256, layers=4, heads=4, intermediate_size=1024, seq_len=128, batch_size=32, lr=1e-3, dropout=0.1),
    "E 2x128 seq64 p0": dict(vocab_size=4096, hidden_size=128, layers=2, heads=2, intermediate_size=512, seq_len=64, batch_size=32, lr=2e-3, dropout=0.0),
    "F 2x128 seq32 p0": dict(vocab_size=4096, hidden_size=128, layers=2, heads=2, intermediate_size=512, seq_len=32, batch_size=64, lr=2e-3, dropout=0.0),
}


def run(name: str, settings: dict, seed: int, steps: int | None, minutes: float, pairs: bool, folder: Path) -> tuple[pd.DataFrame, dict]:
    probe = masked_lm.PretrainConfig(**COMMON, **settings, seed=seed, steps=40, warmup=0, eval_every=40)
    tokenizer, train_blocks, valid_blocks = masked_lm.prepare_corpus(probe)
    unigram = masked_lm.unigram_perplexity(train_blocks, valid_blocks, tokenizer)
    if steps is None:
        clock = time.perf_counter()
        masked_lm.train(probe, tokenizer, train_blocks, valid_blocks[:8], track_blocks=4, checkpoint_dir=folder / "probe", desc=f"{name} timing")
        per_step = (time.perf_counter() - clock) / 40
        steps = max(600, int(minutes * 60 / per_step) // 600 * 600)
    summary, curves = {"config": name, "seed": seed, "steps": steps}, []
    for with_pe in (True, False) if pairs else (True,):
        label = "pe" if with_pe else "nope"
        cfg = masked_lm.PretrainConfig(
            **COMMON, **settings, seed=seed, position_embeddings=with_pe, steps=steps, warmup=min(400, steps // 10), eval_every=steps // 6
        )
        trained = masked_lm.train(cfg, tokenizer, train_blocks, valid_blocks, checkpoint_dir=folder / label, desc=f"{name} seed {seed} {label}")
        history = trained.history.assign(minutes=trained.history["seconds"].cumsum() / 60)
        curves.append(history[["step", "minutes", "valid_perplexity"]].rename(columns={"valid_perplexity": f"perplexity_{label}"}))
        summary |= {f"steps_per_s_{label}": steps / history["seconds"].sum(), f"perplexity_{label}": history["valid_perplexity"].iloc[-1]}
    summary["unigram_perplexity"] = unigram
    if pairs:
        summary["ratio_nope_over_pe"] = summary["perplexity_nope"] / summary["perplexity_pe"]
    return pd.concat([curves[0], *(c.drop(columns=["step", "minutes"]) for c in curves[1:])], axis=1), summary


@cli
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5.0, help="wall time per run when --steps is not given")
    parser.add_argument("--steps", type=int, default=None, help="optimiser steps per run (default: fitted to --minutes)")
    parser.add_argument("--only", default="", help="comma-separated configuration letters, e.g. A,E")
    parser.add_argument("--seeds", default="0", help="comma-separated seeds, e.g. 0,1,2")
    parser.add_argument("--pairs", action="store_true", help="train each seed without position embeddings too")
    args = parser.parse_args()
    chosen = {k: v for k, v in CONFIGS.items() if not args.only or k.split()[0] in args.only.split(",")}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, settings in chosen.items():
            for seed in (int(s) for s in args.seeds.split(",")):
                history, summary = run(name, settings, seed, args.steps, args.minutes, args.pairs, Path(tmp) / f"{name.split()[0]}-{seed}")
                print(f"\n{name}, seed {seed}\n{history.to_string(index=False, float_format=lambda x: f'{x:.1f}')}", flush=True)
                rows.append(summary)
    print("\n" + pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.2f}"))


if __name__ == "__main__":
    main()
