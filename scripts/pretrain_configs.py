"""Compare pre-training configurations by learning per minute on this machine (chapter 05's choice of default).

For each configuration (the model with position embeddings only): time 20 steps, then train for about `--minutes`
of wall time with the schedule fitted to that many steps, evaluating six times. Prints one table per configuration
(step, minutes, validation perplexity) and a summary with steps/s and the final perplexity beside the unigram one.
Every run uses lib.train.pretrain unchanged, so the numbers are what chapter 05 would get. Usage:
    python scripts/pretrain_configs.py [--minutes 5] [--only A,B]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import pandas as pd

from lib.errors import cli
from lib.train import pretrain

COMMON = dict(
    corpus="book",
    valid_share=0.02,
    weight_decay=0.01,
    adam_betas=(0.9, 0.98),
    adam_eps=1e-6,
    grad_clip=1.0,
    mask_prob=0.15,
    dropout=0.1,
    seed=0,
    position_embeddings=True,
    precision="none",  # float32 steps, as the configurations were compared on 2026-11-23
)
CONFIGS = {
    "A 2x128 seq64": dict(vocab_size=4096, hidden_size=128, layers=2, heads=2, intermediate_size=512, seq_len=64, batch_size=32, lr=2e-3),
    "B 4x128 seq64": dict(vocab_size=4096, hidden_size=128, layers=4, heads=4, intermediate_size=512, seq_len=64, batch_size=32, lr=2e-3),
    "C 2x256 seq64": dict(vocab_size=4096, hidden_size=256, layers=2, heads=4, intermediate_size=1024, seq_len=64, batch_size=32, lr=1e-3),
    "D 4x256 seq128": dict(vocab_size=8192, hidden_size=256, layers=4, heads=4, intermediate_size=1024, seq_len=128, batch_size=32, lr=1e-3),
}


def run(name: str, settings: dict, minutes: float, folder: Path) -> tuple[pd.DataFrame, dict]:
    probe = pretrain.PretrainConfig(**COMMON, **settings, steps=40, warmup=0, eval_every=40)
    tokenizer, train_blocks, valid_blocks = pretrain.prepare_corpus(probe)
    unigram = pretrain.unigram_perplexity(train_blocks, valid_blocks, tokenizer)
    clock = time.perf_counter()
    pretrain.train(probe, tokenizer, train_blocks, valid_blocks[:8], track_blocks=4, checkpoint_dir=folder / "probe", desc=f"{name} timing")
    per_step = (time.perf_counter() - clock) / 40
    steps = max(600, int(minutes * 60 / per_step) // 600 * 600)
    cfg = pretrain.PretrainConfig(**COMMON, **settings, steps=steps, warmup=min(400, steps // 10), eval_every=steps // 6)
    trained = pretrain.train(cfg, tokenizer, train_blocks, valid_blocks, checkpoint_dir=folder / "runs", desc=name)
    history = trained.history.assign(minutes=trained.history["seconds"].cumsum() / 60)
    summary = {
        "config": name,
        "steps": steps,
        "steps_per_s": steps / (history["seconds"].sum()),
        "minutes": history["minutes"].iloc[-1],
        "valid_perplexity": history["valid_perplexity"].iloc[-1],
        "unigram_perplexity": unigram,
        "ratio_to_unigram": history["valid_perplexity"].iloc[-1] / unigram,
    }
    return history[["step", "minutes", "valid_perplexity"]], summary


@cli
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--minutes", type=float, default=5.0, help="wall time per configuration")
    parser.add_argument("--only", default="", help="comma-separated configuration letters, e.g. A,C")
    args = parser.parse_args()
    chosen = {k: v for k, v in CONFIGS.items() if not args.only or k.split()[0] in args.only.split(",")}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, settings in chosen.items():
            history, summary = run(name, settings, args.minutes, Path(tmp) / name.split()[0])
            print(f"\n{name}\n{history.to_string(index=False, float_format=lambda x: f'{x:.1f}')}", flush=True)
            rows.append(summary)
    print("\n" + pd.DataFrame(rows).to_string(index=False, float_format=lambda x: f"{x:.2f}"))


if __name__ == "__main__":
    main()
