"""Chapter 11's experiment (Biš et al. 2021, §4): a few tokens cover most of a corpus, and the tokens training rarely
(or never) updates sit close together, away from the rest. Coverage curves of words and of each tokenizer's tokens, and
the mean cosine between the reference tokens (never-trained or rarest) and the rest of the vocabulary in bins by index
and by corpus frequency."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..core import paper
from ..core.checks import positive_int
from ..core.declaration import chapter
from ..core.sources import names
from ..core.store import Writer
from ..datasets.tasks import corpus_documents
from ..encode.models import LoadedModel, load_model
from ..measure import inference, vocabulary
from . import plotting
from .plotting import COLORS
from .verdicts import UNTESTABLE, Claim, Outcome, Tables, decide, from_units, outcome, unit
from .wording import listed, span, whole_range

CHAPTER = chapter("11_rare_words")

MARKS = (0.3, 0.5, 0.98)  # shares of the corpus the coverage table reports


def coverage_row(unit: str, counts: np.ndarray) -> dict:
    """How many distinct items there are, how many occurrences, and how many items cover each share in MARKS."""
    return {
        "unit": unit,
        "distinct": int((counts > 0).sum()),
        "total": int(counts.sum()),
        **{f"items_for_{int(100 * m)}%": k for m, k in zip(MARKS, vocabulary.items_for_share(counts, MARKS))},
    }


@dataclass(frozen=True)
class Corpus:
    collections: list[str]  # the parts of the book's pre-training corpus counted
    documents: list[str]
    words: np.ndarray  # whole-word counts


def corpus(collections: str, bin_size: int) -> Corpus:
    """The corpus the chapter counts (parameters checked first), announced in one line."""
    positive_int("bin_size", bin_size)
    chosen = names(collections, "collections", ("brown", "gutenberg"))
    documents = corpus_documents(tuple(chosen))
    words = vocabulary.word_counts(documents)
    print(
        f"The corpus ({' and '.join(chosen)}): {len(documents)} documents, {sum(map(len, documents)) / 1e6:.1f} M characters, "
        f"{words.sum():,} words ({len(words):,} distinct)"
    )
    return Corpus(chosen, documents, words)


@dataclass
class RareTokens:
    name: str  # the model's
    curve: np.ndarray  # coverage curve of the model's tokens
    coverage: dict  # its coverage_row
    by_index: pd.DataFrame  # binned cosine to the reference tokens, vocabulary in id order
    by_frequency: pd.DataFrame  # the same, most frequent tokens first
    info: dict  # what the reference tokens are, and whether they occur in the corpus
    matrix: np.ndarray  # W
    reference: np.ndarray  # the reference token ids
    frequency_order: np.ndarray  # token ids, most frequent in the corpus first

    def by_frequency_bins(self, bin_size: int) -> pd.DataFrame:
        """The frequency-ordered binned cosine with another bin size."""
        return vocabulary.binned_cosine(self.matrix, self.reference, self.frequency_order, bin_size)


def _bins(lm: LoadedModel, documents: list[str], bin_size: int, own_corpus: bool) -> RareTokens:
    """One model: token counts on the documents, the reference tokens (for a model trained on these documents, the ids
    that never occur in them), and the binned cosines."""
    counts = vocabulary.token_counts(lm, documents)
    curve, row = vocabulary.coverage(counts), coverage_row(f"{lm.name} tokens", counts)
    w = vocabulary.embedding_matrix(lm)
    counts = np.pad(counts, (0, max(0, len(w) - len(counts))))[: len(w)]
    unused, how, unseen = vocabulary.reference_tokens(lm, counts if own_corpus else None)
    frequency_order = np.lexsort((np.arange(len(w)), -counts))  # most frequent first, ties by index
    info = {
        "name": lm.name,
        "vocabulary": len(w),
        "reference_tokens": how,
        "never_trained": unseen,
        "reference_seen_in_corpus": int((counts[unused] > 0).sum()),
    }
    return RareTokens(
        lm.name,
        curve,
        row,
        vocabulary.binned_cosine(w, unused, np.arange(len(w)), bin_size),
        vocabulary.binned_cosine(w, unused, frequency_order, bin_size),
        info,
        w,
        unused,
        frequency_order,
    )


def run(spec: str, corpus: Corpus, *, bin_size: int, results: Writer, parameters: dict, device: str = "auto", dtype: str = "auto") -> RareTokens:
    """One model: its tokens counted on the corpus and the binned cosines to its reference tokens (both tables written)."""
    lm = load_model(spec, device=device, dtype=dtype)
    own_corpus = spec.startswith("trained:") and set(corpus.collections) == {"brown", "gutenberg"}  # the corpus chapter 05 trained on
    found = _bins(lm, corpus.documents, bin_size, own_corpus=own_corpus)
    results.table(found.by_index, UNUSED_BY_INDEX, spec, parameters=parameters, model_info=found.info)
    results.table(found.by_frequency, RARE_COSINE, spec, parameters=parameters, model_info=found.info)
    print(f"{lm.name}: the reference tokens are {found.info['reference_tokens']}; {found.info['reference_seen_in_corpus']} of them occur in the corpus")
    return found


def coverage(runs: dict[str, RareTokens], corpus: Corpus, results: Writer, parameters: dict) -> pd.DataFrame:
    """How many whole words, and how many of each model's tokens, cover 30%, 50% and 98% of the corpus (written)."""
    table = pd.DataFrame([coverage_row("whole words", corpus.words), *(r.coverage for r in runs.values())])
    results.table(table, COVERAGE, "corpus", parameters=parameters, model_info={"name": "every model's tokenizer"})
    return table


def findings(runs: dict[str, RareTokens], coverage_table: pd.DataFrame, bin_size: int) -> list[str]:
    """What our run shows: per model, the cosine with the reference tokens from frequent to rare; the coverage."""
    lines = []
    for name, r in runs.items():
        f = r.by_frequency
        full = f[f["n_tokens"] == bin_size]
        rarest = (
            f"{full['mean_cosine'].iloc[-1]:.2f} for the rarest full bin"
            if len(full) > 1
            else f"the vocabulary has only {_bins_text(len(f), bin_size)}, too few to compare frequent with rare tokens"
        )
        low, high = r.by_index["mean_cosine"].min(), r.by_index["mean_cosine"].max()
        spread = f"ranges from {low:.2f} to {high:.2f}" if f"{low:.2f}" != f"{high:.2f}" else f"is {low:.2f} throughout"
        lines.append(
            f"- **{name}** (reference: {r.info['reference_tokens']}): mean cosine with the reference tokens {f['mean_cosine'].iloc[0]:.2f} "
            f"for the {min(bin_size, int(f['n_tokens'].iloc[0])):,} "
            f"most frequent tokens of our corpus, {rarest}; by vocabulary index it {spread}."
        )
    row = coverage_table.set_index("unit")
    covered = "; ".join(f"{unit}: {r['items_for_30%']:,} / {r['items_for_50%']:,} / {r['items_for_98%']:,}" for unit, r in row.iterrows())
    return [*lines, "", f"Tokens needed for 30% / 50% / 98% of the corpus: {covered}."]


def _bins_text(bins: int, bin_size: int) -> str:
    return f"{bins} bin{'s' if bins != 1 else ''} of {bin_size:,}"


def rare_minus_frequent(t: pd.DataFrame) -> tuple[inference.Estimate, pd.Series, pd.Series] | None:
    """The mean cosine with the reference tokens of the rarest full frequency bin minus that of the most frequent bin
    (Welch over the bins' tokens), with the two bins' rows; None with fewer than two full bins."""
    full = t[t["n_tokens"] == t["n_tokens"].max()]
    if len(full) < 2:
        return None
    first, last = full.iloc[0], full.iloc[-1]
    n = int(first["n_tokens"])
    return inference.welch(last["mean_cosine"], last["std_cosine"], n, first["mean_cosine"], first["std_cosine"], n, "tokens"), first, last


def answer(runs: dict[str, RareTokens], coverage_table: pd.DataFrame, bin_size: int) -> list[str]:
    """The chapter's answer: how much closer to the reference tokens the rarest tokens of our corpus sit than the most
    frequent (one model: its difference and interval; several: the range, and how many intervals lie above zero), and
    how few tokens cover a third of the corpus."""
    found = {name: rare_minus_frequent(r.by_frequency) for name, r in runs.items()}
    compared = {name: f[0] for name, f in found.items() if f is not None}
    small = [name for name, f in found.items() if f is None]
    sentences = []
    if compared:
        above = sum(e.low > 0 for e in compared.values())
        size = int(runs[next(iter(compared))].by_frequency["n_tokens"].max())
        paper_bins = paper.table("bis2021", "unused_claims").sort_values("paper_mean_cosine")["paper_mean_cosine"]
        said = f"the paper: {paper_bins.iloc[0]:.2f} → {paper_bins.iloc[-1]:.2f}"
        if len(compared) == 1:
            name, e = next(iter(compared.items()))
            rise = f"by {e.value:.2f} in {name} (95% interval {e.low:.2f} to {e.high:.2f}, Welch over the tokens; {said})"
        else:
            low, high = min(e.value for e in compared.values()), max(e.value for e in compared.values())
            shown = span(f"{low:.2f}", f"{high:.2f}")
            rise = f"by {shown} across {len(compared)} models (95% intervals above zero in {above} of them, Welch over the tokens; {said})"
        lead = "Yes" if above == len(compared) else "Not in every model"
        left_out = f"; {listed(small)} {'has' if len(small) == 1 else 'have'} too few tokens to compare" if small else ""
        sentences.append(
            f"{lead}: the mean cosine with the never- or hardly-trained reference tokens is higher for the {size:,} rarest tokens of our corpus than "
            f"for the {size:,} most frequent, {rise}{left_out}."
        )
    elif small:
        sentences.append(f"This run cannot tell: {listed(small)} {'has' if len(small) == 1 else 'have'} too few tokens for two bins of {bin_size:,}.")
    tokens = coverage_table[coverage_table["unit"] != "whole words"]["items_for_30%"]
    words = coverage_table.set_index("unit").loc["whole words"]
    claim = paper.table("bis2021", "coverage_claims").set_index("paper_share_percent")["paper_tokens"]
    sentences.append(
        f"And a handful of tokens covers much of the corpus: the {whole_range(tokens)} most frequent cover 30% of its {words['total']:,} words "
        f"(the paper: {claim.get(30, float('nan')):,})."
    )
    return sentences


def coverage_lines(coverage_table: pd.DataFrame) -> str:
    """Exercise ex-11-read: items for half and 98% of the corpus, per unit, and why subwords need fewer."""
    return (
        "\n".join(
            f"- **{r['unit']}**: {r['items_for_50%']:,} items cover 50%, {r['items_for_98%']:,} cover 98% ({r['distinct']:,} distinct)."
            for _, r in coverage_table.iterrows()
        )
        + "\n\nA subword vocabulary splits rare words into pieces that also occur in other words, so its pieces are more frequent "
        "than the words they build, and punctuation and frequent suffixes count as items of their own."
    )


def bin_size_effect(runs: dict[str, RareTokens], bin_size: int) -> str:
    """Exercise ex-11-bins: for the last model, how often the frequency-ordered cosine rises with bins of bin_size and of half."""
    name, last = list(runs.items())[-1]
    half = max(1, bin_size // 2)

    def rises(t: pd.DataFrame, size: int) -> str:
        steps = len(t) - 1
        ups = int((t["mean_cosine"].diff() > 0).sum())
        if not steps:
            return f"bins of {size:,} leave a single bin"
        return f"with bins of {size:,} the mean cosine rises in {ups} of {steps} step{'s' if steps != 1 else ''}"

    return (
        f"**{name}**: {rises(last.by_frequency, bin_size)}; {rises(last.by_frequency_bins(half), half)}. "
        "Smaller bins average fewer tokens, so each step of the curve is noisier; a trend from frequent to rare tokens that is real "
        "shows in both."
    )


def figure_coverage(runs: dict[str, RareTokens], corpus: Corpus, results: Writer) -> None:
    """Share of a corpus covered by the k most frequent items (log k), with horizontal marks; and rank-frequency on log-log axes."""
    groups: list[tuple[list[str], np.ndarray]] = []  # models with one tokenizer draw one curve, labelled with all their names
    for name, r in runs.items():
        same = next((g for g in groups if len(g[1]) == len(r.curve) and np.array_equal(g[1], r.curve)), None)
        if same:
            same[0].append(name)
        else:
            groups.append(([name], r.curve))
    curves = {"whole words": vocabulary.coverage(corpus.words)}
    curves |= {", ".join(names) + " tokens" + (" (one tokenizer: one curve)" if len(names) > 1 else ""): cov for names, cov in groups}
    fig, (left, right) = plotting.grid(2, columns=2, panel_height=3.4)
    for (name, cov), color in zip(curves.items(), COLORS):
        k = np.arange(1, len(cov) + 1)
        left.plot(k, 100 * cov, color=color, label=name)
        freq = np.diff(np.concatenate([[0.0], cov]))
        right.loglog(k, freq, color=color, label=name)
    for mark in MARKS:
        left.axhline(100 * mark, color="grey", lw=0.7, ls=":")
    left.set(xscale="log", xlabel="k most frequent items", ylabel="% of the corpus covered", title="coverage")
    right.set(xlabel="rank", ylabel="share of the corpus", title="rank-frequency (log-log)")
    plotting.legend_above(fig, left)
    words = vocabulary.items_for_share(corpus.words, MARKS)
    tokens = pd.DataFrame([r.coverage for r in runs.values()])
    alt = (
        f"Whole words need {words[0]:,} items for 30% of the corpus and {words[-1]:,} for 98%; the models' tokenizers need "
        f"{whole_range(tokens['items_for_30%'])} and {whole_range(tokens['items_for_98%'])}."
    )
    results.figure(fig, "coverage", "Share of the corpus covered by the most frequent words or subword tokens.", alt=alt)


def figure_by_index(runs: dict[str, RareTokens], bin_size: int, results: Writer) -> None:
    """The cosine to the reference tokens by vocabulary index (the paper's axis)."""
    tables = {n: r.by_index for n, r in runs.items()}
    fig = _binned_cosines(tables, f"vocabulary index (bins of {bin_size:,})")
    alt = "Mean cosine with the reference tokens, first bin of indices and highest bin: " + "; ".join(
        f"{n} {t['mean_cosine'].iloc[0]:.2f}, highest {t['mean_cosine'].max():.2f} from index {int(t.loc[t['mean_cosine'].idxmax(), 'bin_start']):,}"
        for n, t in tables.items()
    )
    results.figure(fig, "unused_cosine_by_index", "Cosine between embeddings and the reference tokens, by vocabulary index.", alt=alt + ".")


def figure_by_frequency(runs: dict[str, RareTokens], bin_size: int, results: Writer) -> None:
    """The cosine to the reference tokens by frequency rank in our corpus."""
    tables = {n: r.by_frequency for n, r in runs.items()}
    fig = _binned_cosines(tables, f"frequency rank in our corpus (bins of {bin_size:,}; 0 = most frequent)")
    alt = "Mean cosine with the reference tokens, most frequent bin → last bin: " + "; ".join(
        f"{n} {t['mean_cosine'].iloc[0]:.2f} → {t['mean_cosine'].iloc[-1]:.2f}" for n, t in tables.items()
    )
    results.figure(fig, "unused_cosine_by_frequency", "Cosine between embeddings and the reference tokens, by frequency rank in our corpus.", alt=alt + ".")


def _binned_cosines(tables: dict[str, pd.DataFrame], xlabel: str):
    """Mean cosine between the reference tokens and each bin of the vocabulary, one line per model."""
    fig, (ax,) = plotting.grid(1, columns=1, panel_height=4.2)
    for (name, t), color in zip(tables.items(), COLORS):
        ax.plot(t["bin_start"], t["mean_cosine"], "-o", ms=3, color=color, label=name)
    ax.axhline(0, color="grey", lw=0.8)
    ax.set(xlabel=xlabel, ylabel="mean cosine with the reference tokens")
    plotting.legend_above(fig, ax)
    return fig


PAPER_WORDS = {  # the paper's tables' columns as the page prints them
    "paper_label": "model",
    "paper_share_percent": "share of the corpus (%)",
    "paper_tokens": "tokens",
    "paper_note": "in the paper's words",
    "paper_indices": "vocabulary indices",
    "paper_mean_cosine": "mean cosine",
}


def paper_table(key: str) -> pd.DataFrame:
    """One of Biš et al.'s tables this chapter shows, its columns in words."""
    return paper.table("bis2021", key).drop(columns="model", errors="ignore").rename(columns=PAPER_WORDS)


COVERAGE = CHAPTER.table("coverage", "unit distinct total items_for_30% items_for_50% items_for_98%")


RARE_COSINE = CHAPTER.table("unused_cosine_by_frequency", "bin_start bin_end n_tokens mean_cosine std_cosine")
UNUSED_BY_INDEX = CHAPTER.table("unused_cosine_by_index", "bin_start bin_end n_tokens mean_cosine std_cosine")


@CHAPTER.rule
def rare_tokens_closer(tables: Tables, model: str, claim: Claim) -> Outcome:
    found = rare_minus_frequent(tables.read(model, claim.chapter, claim.table))
    if found is None:
        return Outcome(UNTESTABLE, "fewer than two full frequency bins")
    estimate, first, last = found
    text = f"mean cosine {first['mean_cosine']:.2f} with the most frequent bin, {last['mean_cosine']:.2f} with the rarest full bin: {estimate.text(3)}"
    return outcome(decide(estimate, claim.margin), text, estimate)


@CHAPTER.rule
def few_tokens_cover(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    tokens = t[t["unit"].str.endswith(" tokens")]
    units = [
        unit(u.removesuffix(" tokens"), inference.exact(n, "counted on the whole corpus"), claim.margin, "below", of="tokenizers")
        for u, n in zip(tokens["unit"], tokens["items_for_30%"])
    ]
    return from_units(units, claim, 0)
