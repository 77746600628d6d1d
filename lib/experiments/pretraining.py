"""Chapter 05's experiment over seeds: pairs of masked-LM pre-training runs with and without position embeddings (Luo
et al. 2021, §3), each pair sharing a seed, and per run the numbers the verdicts rest on: the final validation
perplexity, the paper's extreme-dimension share and chapter 02's model-level outliers."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
from transformers import PreTrainedTokenizerFast

from ..build.profiles import config
from ..errors import require
from ..measure import metrics
from ..measure.outliers import OutlierReport
from ..settings import autocast_precision, pick_device
from ..train import pretrain


def seed_pairs(names: list[str], seed: int, seeds: int) -> dict[int, tuple[str, str]]:
    """Per seed, the folder names of its (with, without position embeddings) models: the first seed keeps `names`
    (the models other chapters read), later ones add "-seed<k>"."""
    return {s: tuple(n if s == seed else f"{n}-seed{s}" for n in names) for s in range(seed, seed + seeds)}


def pretraining_runs(parameters: Mapping[str, object]) -> tuple[dict[int, tuple[str, str]], dict[str, pretrain.PretrainConfig]]:
    """Chapter 05's runs from its parameters (the cell's namespace, or `chapter_parameters`): per seed the pair of model
    names (with, without position embeddings) and each run's configuration. The chapter and `lib.build.pretraining`
    (the same runs under torchrun, ahead of the chapter) both call this."""
    names = [n.strip() for n in str(parameters["names"]).split(",") if n.strip()]
    require(
        len(names) == 2 and names[0] != names[1], f"names must be two different model names, with then without position embeddings, got {parameters['names']!r}"
    )
    precision = autocast_precision(str(parameters["train_dtype"]), pick_device(str(parameters["device"])))
    base = config(pretrain.PretrainConfig, parameters, position_embeddings=True, adam_betas=tuple(parameters["adam_betas"]), precision=precision)
    pairs = seed_pairs(names, int(parameters["seed"]), int(parameters["seeds"]))
    configs = {name: replace(base, seed=s, position_embeddings=name == pe) for s, (pe, nope) in pairs.items() for name in (pe, nope)}
    return pairs, configs


def perplexity_gap(
    folder: Path,
    pair: tuple[str, str],
    configs: dict[str, pretrain.PretrainConfig],
    tokenizer: PreTrainedTokenizerFast,
    blocks: pretrain.shards.Blocks,
    device: str,
) -> dict:
    """One seed's pair (with, without position embeddings; folder names under `folder`) scored on the same masked
    validation tokens: both perplexities and their ratio (without / with) with a 95% paired bootstrap interval over
    blocks."""
    with_pe, without_pe = (configs[name] for name in pair)
    require(
        (with_pe.seed, with_pe.mask_prob) == (without_pe.seed, without_pe.mask_prob),
        f"{pair[0]} and {pair[1]} would be scored with different maskings; a pair must share seed and mask_prob",
    )
    (sums_pe, counts), (sums_nope, _) = (pretrain.saved_block_losses(folder / name, configs[name], tokenizer, blocks, device) for name in pair)
    ratio, low, high = metrics.perplexity_ratio(sums_pe, sums_nope, counts, seed=with_pe.seed)
    return {
        "seed": with_pe.seed,
        "validation_blocks": len(counts),
        "masked_tokens": int(counts.sum()),
        "perplexity_with_pe": float(np.exp(sums_pe.sum() / counts.sum())),
        "perplexity_without_pe": float(np.exp(sums_nope.sum() / counts.sum())),
        "ratio_without_over_with": ratio,
        "ratio_low_95": low,
        "ratio_high_95": high,
    }


def run_summary(name: str, cfg: pretrain.PretrainConfig, history: pd.DataFrame, size: dict, report: OutlierReport, unigram: float) -> dict:
    """One run's row of the chapter's summary (PRETRAIN_SUMMARY): its size, training, final perplexity and, on the
    outlier analysis's sentences, the most frequent extreme dimension's share and the number of model-level outliers."""
    top = report.pooled.loc[report.pooled["percent"].idxmax()]
    return {
        "model": name,
        "seed": cfg.seed,
        "position_embeddings": cfg.position_embeddings,
        **size,
        "steps": int(history["step"].iloc[-1]),
        "tokens_seen_millions": history["tokens_seen"].iloc[-1] / 1e6,
        "training_minutes": history["seconds"].sum() / 60,
        "valid_perplexity": history["valid_perplexity"].iloc[-1],
        "unigram_perplexity": unigram,
        "top_extreme_kind": top["kind"],
        "top_extreme_dim": int(top["dim"]),
        "top_extreme_percent": float(top["percent"]),
        "model_outliers": int(report.model_outliers.shape[0]),
    }
