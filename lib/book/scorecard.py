"""The claims scorecard: every claim of the papers in `claims.yaml`, tested on the result tables one profile's chapters
wrote, model by model.

A verdict is computed only from those tables: `holds`, `mixed` (part of the claim holds, or the difference is within
the noise), `does not hold`, `not testable` (the claim is outside what the book can run offline, or the model lacks
what the claim is about) or `not run` (the chapter has not written the table for this profile). Each verdict comes
with the number behind it; each rule states its threshold and why in `claims.yaml`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

from ..build.sources import chapters
from ..errors import require
from ..experiments.schemas import schema
from ..provenance import record
from ..settings import results_dir
from .results import slug

HOLDS, MIXED, FAILS, UNTESTABLE, NOT_RUN = "holds", "mixed", "does not hold", "not testable", "not run"
VERDICTS = (HOLDS, MIXED, FAILS, UNTESTABLE, NOT_RUN)
REGISTRY = Path(__file__).with_name("claims.yaml")


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    section: str
    claim: str
    paper_value: str
    chapter: str | None = None
    table: str | None = None
    rule: str | None = None
    threshold: float | None = None
    reason: str | None = None
    untestable: str | None = None


@dataclass(frozen=True)
class Outcome:
    verdict: str
    ours: str


def claims(path: Path = REGISTRY) -> list[Claim]:
    """The registry, each entry checked: a testable claim names a chapter, table, known rule, threshold and reason."""
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))
    known = {f.name for f in fields(Claim)}
    out = []
    for entry in entries:
        require(set(entry) <= known, f"{path.name}: {entry.get('id')}: unknown fields {sorted(set(entry) - known)}")
        claim = Claim(**entry)
        if claim.untestable is None:
            missing = [f for f in ("chapter", "table", "rule", "threshold", "reason") if getattr(claim, f) is None]
            require(not missing, f"{path.name}: {claim.id} needs {', '.join(missing)} (or `untestable` with a reason)")
            require(claim.rule in RULES, f"{path.name}: {claim.id}: unknown rule {claim.rule!r}; rules are {', '.join(sorted(RULES))}")
            require(claim.chapter in chapters(), f"{path.name}: {claim.id}: no chapter {claim.chapter!r}")
            schema(claim.chapter, claim.table)  # every scored table has declared columns
        out.append(claim)
    ids = [c.id for c in out]
    require(len(ids) == len(set(ids)), f"{path.name}: claim ids repeat")
    return out


class Tables:
    """One profile's result tables (`results/<profile>/<model>/<chapter>/<table>.csv`). The profile's results folder is
    recorded as an input of the running chapter, so the scorecard is executed again when any result changes."""

    def __init__(self, profile: str, root: Path | None = None):
        self.root = (root or results_dir()) / profile
        record("data", self.root, f"results of the {profile} edition")

    def path(self, model: str, chapter: str, table: str) -> Path:
        return self.root / model / chapter / f"{table}.csv"

    def read(self, model: str, chapter: str, table: str) -> pd.DataFrame | None:
        """The table, checked against its declared schema (`lib.experiments.schemas`), or None when it was not written."""
        path = self.path(model, chapter, table)
        return schema(chapter, table).check(pd.read_csv(path)) if path.is_file() else None

    def models(self, chapter: str, table: str) -> list[str]:
        """Model folders that hold the table, sorted."""
        return sorted(p.parent.parent.name for p in self.root.glob(f"*/{chapter}/{table}.csv"))

    def name(self, model: str, chapter: str) -> str:
        """The model's name as a chapter recorded it (meta.json: this chapter's first, then any other's), else its folder."""
        folder = self.root / model
        for meta in [folder / chapter / "meta.json", *sorted(folder.glob("*/meta.json"))]:
            try:
                name = json.loads(meta.read_text(encoding="utf-8"))["model_info"].get("name")
            except (OSError, ValueError, KeyError, AttributeError):
                continue
            if name:
                return name
        return model


Rule = Callable[[Tables, str, Claim], Outcome]


def _grade(passed: int, total: int) -> str:
    return HOLDS if total and passed == total else MIXED if passed else FAILS


def _contextual(frame: pd.DataFrame) -> pd.DataFrame:
    return frame[frame["layer"] >= 1]


def positive_in_every_layer(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = _contextual(tables.read(model, claim.chapter, claim.table))
    above = int((t["ci95_low"] > claim.threshold).sum())
    return Outcome(
        _grade(above, len(t)),
        f"95% interval above {claim.threshold:g} in {above} of {len(t)} layers; mean cosine {t['mean_cosine'].min():.3f} to {t['mean_cosine'].max():.3f}",
    )


def top_extreme_share(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    best = t.loc[t["percent"].idxmax()]
    share = float(best["percent"])
    verdict = HOLDS if share >= claim.threshold else MIXED if share >= claim.threshold / 2 else FAILS
    kind = "minimum" if best["kind"] == "argmin" else "maximum"
    return Outcome(verdict, f"dim {int(best['dim'])} is the {kind} of {share:.1f}% of {int(best['n_vectors']):,} vectors")


def model_outliers_exist(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    level = t[t["model_outlier"].astype(bool)]
    if len(level) >= claim.threshold:
        return Outcome(HOLDS, "model-level outlier dims " + ", ".join(f"{int(r.dim)} (|z| {r.max_abs_z:.0f})" for r in level.itertuples()))
    largest = f"; largest |z| of a flagged dim {t['max_abs_z'].max():.1f}" if len(t) else "; no dim flagged in any layer"
    return Outcome(FAILS, "no model-level outlier" + largest)


def position_argmax_share(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    row = t[t["table"] == "position after the first"]
    if row.empty:
        return Outcome(UNTESTABLE, "the model has no position-embedding table")
    share = float(row["argmax_percent"].iloc[0])
    verdict = HOLDS if share >= claim.threshold else MIXED if share >= 50 else FAILS
    return Outcome(verdict, f"dim {int(row['argmax_dim'].iloc[0])} is the maximum of {share:.1f}% of positions")


def layernorm_top_rank(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = _contextual(tables.read(model, claim.chapter, claim.table))
    if t.empty:
        return Outcome(UNTESTABLE, "no model-level outlier dimension to rank")
    texts, passed = [], 0
    for dim, part in t.groupby("dim"):
        share = part.assign(top=part["rank"] <= claim.threshold).groupby(["layernorm", "param"])["top"].mean()
        (layernorm, param), best = share.idxmax(), float(share.max())
        passed += best >= 0.5
        texts.append(f"dim {dim}: top {claim.threshold:g} of the {layernorm} LN's {'γ' if param == 'gamma' else 'β'} in {best:.0%} of layers")
    return Outcome(_grade(passed, t["dim"].nunique()), "; ".join(texts))


def probe_low_layers(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    low = t[t["layer"].between(1, 3)]
    good = int((low["test_accuracy"] >= claim.threshold).sum())
    return Outcome(_grade(good, len(low)), "test accuracy in layers 1-3: " + ", ".join(f"{a:.1%}" for a in low["test_accuracy"]))


def outlier_top_contributor(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    ranks = [c for c in t.columns if c.startswith("dim ") and c.endswith(" rank")]
    if not ranks:
        return Outcome(UNTESTABLE, "no model-level outlier dimension in this model")
    firsts = {c.removesuffix(" rank"): int((t[c] == 1).sum()) for c in ranks}
    best = max(firsts.values())
    verdict = HOLDS if best >= claim.threshold * len(t) else MIXED if best else FAILS
    return Outcome(verdict, "; ".join(f"{d} ranks first in {n} of {len(t)} layers (best rank {int(t[d + ' rank'].min())})" for d, n in firsts.items()))


def _pretrained_pair(tables: Tables, model: str, claim: Claim) -> tuple[pd.Series, pd.Series]:
    t = tables.read(model, claim.chapter, claim.table)
    with_pe, without_pe = t[t["position_embeddings"].astype(bool)].iloc[0], t[~t["position_embeddings"].astype(bool)].iloc[0]
    return with_pe, without_pe


def pe_lowers_perplexity(tables: Tables, model: str, claim: Claim) -> Outcome:
    with_pe, without_pe = _pretrained_pair(tables, model, claim)
    ratio = without_pe["valid_perplexity"] / with_pe["valid_perplexity"]
    verdict = HOLDS if ratio >= claim.threshold else MIXED if ratio > 1 else FAILS
    perplexities = f"{with_pe['valid_perplexity']:.1f} with, {without_pe['valid_perplexity']:.1f} without position embeddings"
    return Outcome(verdict, f"validation perplexity {perplexities} ({ratio:.2f}×)")


def outliers_only_with_pe(tables: Tables, model: str, claim: Claim) -> Outcome:
    counts = []
    for row in _pretrained_pair(tables, model, claim):
        found = tables.read(slug(f"trained:{row['model']}"), claim.chapter, "outlier_dimensions")
        if found is None:
            return Outcome(NOT_RUN, f"no outlier table for trained:{row['model']}")
        counts.append(int(found["model_outlier"].astype(bool).sum()))
    with_pe, without_pe = counts
    verdict = HOLDS if with_pe >= claim.threshold and without_pe == 0 else FAILS
    return Outcome(verdict, f"model-level outliers: {with_pe} with position embeddings, {without_pe} without")


def _variant_layers(tables: Tables, model: str, claim: Claim) -> pd.DataFrame:
    return _contextual(tables.read(model, claim.chapter, claim.table)).pivot(index="layer", columns="variant", values="mean_cosine")


def clipping_lowers_cosine(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = _variant_layers(tables, model, claim)
    lower = int((t["clipped"] < t["raw"]).sum())
    share = lower / len(t)
    verdict = HOLDS if share >= claim.threshold else MIXED if lower else FAILS
    return Outcome(verdict, f"lower after clipping in {lower} of {len(t)} layers; mean {t['raw'].mean():.3f} raw, {t['clipped'].mean():.3f} clipped")


def whitening_near_zero(tables: Tables, model: str, claim: Claim) -> Outcome:
    largest = float(_variant_layers(tables, model, claim)["whitened"].abs().max())
    verdict = HOLDS if largest <= claim.threshold else MIXED if largest <= 2 * claim.threshold else FAILS
    return Outcome(verdict, f"largest |mean cosine| after whitening {largest:.4f}")


def wic_clipping_gain(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table).set_index("variant")
    raw, clipped = (t.loc[v, "dev_accuracy_of_that_choice"] for v in ("raw", "clipped"))
    n = int(t.loc["raw", "dev_pairs"])
    p = (raw + clipped) / 200
    se = 100 * math.sqrt(2 * p * (1 - p) / n)  # difference of two accuracies on the same n pairs, treated as independent
    gain = clipped - raw
    verdict = HOLDS if gain > claim.threshold * se else FAILS if gain < -claim.threshold * se else MIXED
    return Outcome(verdict, f"development accuracy {raw:.1f} raw, {clipped:.1f} clipped ({gain:+.1f} ± {claim.threshold * se:.1f} points, {n} pairs)")


def _best_by_set(t: pd.DataFrame) -> pd.DataFrame:
    """Best Spearman per data set and variant, over the contextual layers (as the paper searches); the all-pairs SICK row
    (a second view of SICK) left out."""
    t = t[~t["dataset"].str.contains("all pairs") & (t["layer"] >= 1)]
    return t.groupby(["dataset", "variant"])["spearman_x100"].max().unstack("variant")


def sts_transform_gain(tables: Tables, model: str, claim: Claim) -> Outcome:
    best = _best_by_set(tables.read(model, claim.chapter, claim.table))
    wins = {v: int((best[v] > best["raw"]).sum()) for v in ("clipped", "whitened")}
    passed = sum(n > claim.threshold * len(best) for n in wins.values())
    return Outcome(_grade(passed, 2), f"better than raw on {wins['clipped']} of {len(best)} sets clipped, {wins['whitened']} whitened")


def glove_beats_model(tables: Tables, model: str, claim: Claim) -> Outcome:
    glove = tables.read("glove-6b-50d", claim.chapter, "glove_baseline")
    if glove is None:
        return Outcome(NOT_RUN, "no GloVe baseline table")
    best = _best_by_set(tables.read(model, claim.chapter, claim.table))["raw"]
    years = [d for d in best.index if d.startswith("STS-1")]
    glove = glove.set_index("dataset")["spearman_x100"]
    wins = [d for d in years if d in glove.index and glove[d] > best[d]]
    verdict = HOLDS if len(wins) >= claim.threshold else MIXED if wins else FAILS
    return Outcome(verdict, f"50-d GloVe higher on {len(wins)} of {len(years)} STS 2012-2016 sets" + (f" ({', '.join(wins)})" if wins else ""))


def supervised_clipping_small(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    chosen = t.loc[t.groupby(["task", "variant"])["dev_accuracy"].idxmax()].set_index(["task", "variant"])["test_accuracy"]
    gaps = {task: chosen[(task, "clipped")] - chosen[(task, "raw")] for task in t["task"].unique()}
    small = sum(abs(g) <= claim.threshold for g in gaps.values())
    return Outcome(_grade(small, len(gaps)), "clipped − raw test accuracy: " + ", ".join(f"{k} {g:+.1f}" for k, g in gaps.items()))


def rare_tokens_closer(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    full = t[t["n_tokens"] == t["n_tokens"].max()]
    if len(full) < 2:
        return Outcome(UNTESTABLE, "fewer than two full frequency bins")
    first, last = float(full["mean_cosine"].iloc[0]), float(full["mean_cosine"].iloc[-1])
    verdict = HOLDS if last - first >= claim.threshold else MIXED if last > first else FAILS
    return Outcome(verdict, f"mean cosine {first:.2f} with the most frequent bin, {last:.2f} with the rarest full bin")


def few_tokens_cover(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    tokens = t[t["unit"].str.endswith(" tokens")]
    few = int((tokens["items_for_30%"] <= claim.threshold).sum())
    counts = ", ".join(f"{unit.removesuffix(' tokens')} {n}" for unit, n in zip(tokens["unit"], tokens["items_for_30%"]))
    return Outcome(_grade(few, len(tokens)), f"tokens for 30%: {counts}")


def centering_raises_isotropy(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table).set_index("variant")
    raw, centered = float(t.loc["raw", "I1"]), float(t.loc["centered", "I1"])
    verdict = HOLDS if centered - raw >= claim.threshold else MIXED if centered > raw else FAILS
    return Outcome(verdict, f"I(W) {raw:.3f} raw, {centered:.3f} centered")


def postprocessing_helps(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    means = t.groupby("variant")["pearson_cosine"].mean()
    post = [v for v in means.index if v.startswith("post-processed")]
    if not post or np.isnan(means.get("raw", np.nan)) or np.isnan(means[post[0]]):
        return Outcome(UNTESTABLE, "too few word pairs in the vocabulary for a correlation")
    gain = means[post[0]] - means["raw"]
    return Outcome(HOLDS if gain > claim.threshold else FAILS, f"average Pearson × 100 {means['raw']:.1f} raw, {means[post[0]]:.1f} {post[0]}")


def no_consistent_gain(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    tested = t[t["p"].notna()]
    gains = int((tested["significant"].astype(bool) & (tested["difference"] > 0)).sum())
    allowed = math.ceil(claim.threshold * len(tested))
    verdict = HOLDS if gains <= allowed else FAILS
    return Outcome(verdict, f"{gains} significant gains in {len(tested)} tests (chance alone: about {claim.threshold * len(tested):.1f})")


def spectrum_isotropic(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    spectrum = t[t["method"].str.startswith("spectrum")]
    if spectrum.empty:
        return Outcome(NOT_RUN, "no spectrum-control runs")
    i1 = spectrum["I1_context_mean"]
    return Outcome(
        _grade(int((i1 >= claim.threshold).sum()), len(spectrum)), f"I1 of the output embeddings after spectrum control {i1.min():.3f} to {i1.max():.3f}"
    )


def flow_costly(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    flow = t[t["method"] == "flow"]["time_ratio"]
    if flow.empty:
        return Outcome(NOT_RUN, "no flow runs")
    ratio = float(flow.mean())
    return Outcome(HOLDS if ratio >= claim.threshold else MIXED if ratio > 1.2 else FAILS, f"{ratio:.2f}× the uncalibrated time per epoch")


RULES: dict[str, Rule] = {
    rule.__name__: rule
    for rule in (
        positive_in_every_layer,
        top_extreme_share,
        model_outliers_exist,
        position_argmax_share,
        layernorm_top_rank,
        probe_low_layers,
        outlier_top_contributor,
        pe_lowers_perplexity,
        outliers_only_with_pe,
        clipping_lowers_cosine,
        whitening_near_zero,
        wic_clipping_gain,
        sts_transform_gain,
        glove_beats_model,
        supervised_clipping_small,
        rare_tokens_closer,
        few_tokens_cover,
        centering_raises_isotropy,
        postprocessing_helps,
        no_consistent_gain,
        spectrum_isotropic,
        flow_costly,
    )
}


def scorecard(profile: str, root: Path | None = None, registry: Path = REGISTRY) -> pd.DataFrame:
    """One row per (claim, model): verdict, our number, the paper's, and where it comes from."""
    tables, rows = Tables(profile, root), []
    for claim in claims(registry):
        base = {"claim_id": claim.id, "paper": claim.paper, "section": claim.section, "claim": claim.claim, "paper_value": claim.paper_value}
        where = {"chapter": claim.chapter or "", "table": claim.table or ""}
        if claim.untestable:
            rows.append({**base, "model": "–", "verdict": UNTESTABLE, "ours": claim.untestable, **where, "source": ""})
            continue
        models = tables.models(claim.chapter, claim.table)
        if not models:
            missing = f"{claim.chapter} has not written {claim.table} for this profile"
            rows.append({**base, "model": "–", "verdict": NOT_RUN, "ours": missing, **where, "source": ""})
            continue
        for model in models:
            outcome = RULES[claim.rule](tables, model, claim)
            source = f"{profile}/{model}/{claim.chapter}/{claim.table}.csv"
            rows.append({**base, "model": tables.name(model, claim.chapter), "verdict": outcome.verdict, "ours": outcome.ours, **where, "source": source})
    return pd.DataFrame(rows)
