"""Benchmark lib's extraction against a naive Hugging Face loop and bare forward passes.

Prints, measured in this one run on the same SST-2 sentences:
- tokens/s of lib.encode.extraction with all streaming statistics (LayerStats with covariance, and a
  TokenReservoir), of a naive per-sentence loop with output_hidden_states=True, and of bare
  length-sorted batched forward passes (same batches as lib, no hidden states, no statistics);
- peak memory (max RSS of a fresh process) of the extraction for a small and a 10x larger sample.

Timings are the median of interleaved repeats. Usage:
    python scripts/benchmark_extraction.py [--model minilm] [--sentences 1000] [--repeats 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

import torch

from lib.datasets.tasks import sample_sentences
from lib.encode.collectors import LayerStats, TokenReservoir
from lib.encode.extraction import batch_limits, batches, encode, extract, pad_batch
from lib.encode.models import load_model
from lib.errors import cli


def naive(lm, sentences):
    with torch.inference_mode():
        for s in sentences:
            enc = lm.tokenizer(s, return_tensors="pt", truncation=True, max_length=lm.max_length).to(lm.device)
            lm.model(**enc, output_hidden_states=True)


def bare(lm, sentences):
    enc = encode(lm, sentences)
    with torch.inference_mode():
        for group in batches(enc.lengths, *batch_limits(lm.device)):
            ids, mask = pad_batch([enc.ids(i) for i in group], lm.tokenizer.pad_token_id)
            lm.model(input_ids=ids.to(lm.device), attention_mask=mask.to(lm.device))


def with_statistics(lm, sentences):
    extract(lm, sentences, [LayerStats(covariance=True), TokenReservoir(k=1000, seed=0)], progress=False)


def peak_memory_mb(model: str, n: int) -> float:
    """Max RSS of a fresh process that loads the model and extracts n sentences with all statistics."""
    code = (
        "import resource, sys; from scripts.benchmark_extraction import with_statistics; "
        "from lib.encode.models import load_model; from lib.datasets.tasks import sample_sentences; "
        f"lm = load_model({model!r}); with_statistics(lm, sample_sentences('sst2', 'train', {n}, 0)); "
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return int(out.stdout.strip().splitlines()[-1]) / 1024


@cli
def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="minilm")
    parser.add_argument("--sentences", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--memory-sentences", type=int, nargs=2, default=[2000, 20000])
    args = parser.parse_args()

    lm = load_model(args.model)
    sentences = sample_sentences("sst2", "train", args.sentences, seed=0)
    n_tokens = int(encode(lm, sentences).lengths.sum())
    print(f"{lm.name} on {lm.device}, {torch.get_num_threads()} threads; {len(sentences)} SST-2 sentences, {n_tokens} tokens")
    methods = {"naive per-sentence loop": naive, "bare sorted forward": bare, "lib extraction + all statistics": with_statistics}
    bare(lm, sentences[:64])  # warm-up
    times: dict[str, list[float]] = {name: [] for name in methods}
    for _ in range(args.repeats):
        for name, fn in methods.items():
            start = time.perf_counter()
            fn(lm, sentences)
            times[name].append(time.perf_counter() - start)
    rate = {name: n_tokens / statistics.median(t) for name, t in times.items()}
    for name, r in rate.items():
        print(f"  {name:34s} {r:9.0f} tokens/s")
    lib = rate["lib extraction + all statistics"]
    print(f"  lib / naive loop   = {lib / rate['naive per-sentence loop']:.2f}x   (target >= 4x)")
    print(f"  lib / bare forward = {lib / rate['bare sorted forward']:.2f}x   (target >= 0.9x)")

    small, large = args.memory_sentences
    mem = {n: peak_memory_mb(args.model, n) for n in (small, large)}
    print(f"  peak memory: {small} sentences {mem[small]:.0f} MB, {large} sentences {mem[large]:.0f} MB, ratio {mem[large] / mem[small]:.3f}   (target <= 1.1)")
    print(json.dumps({"model": lm.name, "tokens_per_s": rate, "peak_mb": mem}))


if __name__ == "__main__":
    main()
