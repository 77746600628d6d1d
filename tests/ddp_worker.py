"""A tiny pre-training run for tests/test_distributed.py, started alone or by torchrun (gloo, CPU):

    python -m tests.ddp_worker OUT CHECKPOINTS [--micro-batch N] [--stop-after STEP]

Rank 0 saves the run's history and final weights to OUT (torch.save)."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import torch

from lib.train import bpe, distributed, masked_lm, shards
from tests.test_masked_lm import TEXTS, TINY

STEPS, EVAL_EVERY = 20, 5


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("checkpoints", type=Path)
    parser.add_argument("--micro-batch", type=int, default=None)
    parser.add_argument("--stop-after", type=int, default=None)
    args = parser.parse_args()
    torch.set_num_threads(1)
    tokenizer = bpe.train_tokenizer(TEXTS, 300, 24)
    blocks = shards.in_memory(TEXTS, tokenizer, 24)
    cfg = dataclasses.replace(masked_lm.PretrainConfig(**TINY), steps=STEPS, eval_every=EVAL_EVERY)

    def stop(step: int) -> None:
        if step == args.stop_after:
            raise SystemExit(0)  # every rank stops at the same step, after the checkpoint of the step before

    run = masked_lm.train(
        cfg, tokenizer, blocks, blocks, track_blocks=4, device="cpu", checkpoint_dir=args.checkpoints, micro_batch=args.micro_batch, on_step=stop
    )
    if distributed.world().main:
        torch.save({"history": run.history.to_dict("list"), "weights": run.model.state_dict()}, args.out)


if __name__ == "__main__":
    main()
