# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
# ---

# %% [markdown]
# # Rare words carry the drift
#
# :::{admonition} Before you start
# :class: tip
# **Overview.** Counts how few tokens cover most of a corpus and shows that rarely trained tokens
# drift towards each other.
#
# **Read or run first.** {doc}`10_common_direction`.
# :::
#
# Subword vocabularies are Zipfian: {cite:t}`bis2021too{§2.2}` report that tokenizing CNN/DailyMail
# with WordPiece, the 13 most frequent tokens cover over 30% of the corpus, 85 tokens cover 50%,
# and nearly 15,000 are needed for 98%. A rare token is almost never a softmax *target*, so
# almost every update it receives pushes it in the common direction of {doc}`chapter 10 <10_common_direction>`. The cleanest
# witnesses are tokens that were **never** used in training: BERT's 994 `[unused]` tokens only
# ever receive that push. Their cosine similarity with the rest of the vocabulary rises from
# 0.27 for the most frequent tokens to 0.63 for rare ones (Fig. 3, BERT-base-cased, bins of
# 1,000 vocabulary indices).
#
# The measurements are `lib/experiments/rare_words.py`. Here the corpus is the book's pre-training corpus (Brown + Gutenberg, ~14 MB of text, read
# through the data setting), tokenized with each model's own tokenizer. MiniLM keeps
# BERT-uncased's vocabulary, `[unused]` tokens included. For a vocabulary without them the paper
# takes RoBERTa's last 1,000 tokens; in a byte-level BPE vocabulary those are the rarest merges,
# ordinary tokens that did occur in training, so the book calls them *reference tokens* and keeps
# "never trained" for tokens that truly never occurred: the `[unused]` tokens, and for the book's
# own models ({doc}`chapter 05 <05_pretraining>`), the ids that never occur in the corpus they were trained on (when the
# whole corpus is counted). The cosine is shown in bins of 1,000
# tokens ordered two ways: by **vocabulary index** (the paper's axis; in BERT's WordPiece
# vocabulary later indices are roughly rarer) and by **frequency in our corpus**.

# %% tags=["parameters"]
profile = "default"  # names the results folder
models = "minilm,mpnet,chapter05:pe,chapter05:nope"  # comma-separated model specs; chapter05:pe/nope are chapter 05's models (its `names`)
collections = "brown,gutenberg"  # parts of the corpus to count
bin_size = 1000  # tokens per bin (paper: 1,000)
seed = 0
device = "auto"
dtype = "auto"  # "auto": float32 weights, matrix products in bf16 where the hardware has it natively (about 2x faster here); "float32": all float32

# %%
import pandas as pd

import lib.book.chapter as ch
from lib.core import paper
from lib.datasets.tasks import corpus_documents
from lib.encode.models import load_model
from lib.experiments import rare_words
from lib.measure import vocabulary

specs, results = ch.begin("11_rare_words", profile, models)
ch.positive_int("bin_size", bin_size)
collection_list = ch.names(collections, "collections", ("brown", "gutenberg"))
documents = corpus_documents(tuple(collection_list))
words = vocabulary.word_counts(documents)
print(f"{len(documents)} documents, {sum(map(len, documents)) / 1e6:.1f} M characters, {words.sum():,} words ({len(words):,} distinct)")
parameters = ch.parameters("11_rare_words", globals())

# %%
curves, coverage_rows, by_index, by_frequency, references = {"whole words": vocabulary.coverage(words)}, [], {}, {}, {}
coverage_rows.append(rare_words.coverage_row("whole words", words))
for spec in specs:
    lm = load_model(spec, device=device, dtype=dtype)
    own_corpus = spec.startswith("trained:") and set(collection_list) == {"brown", "gutenberg"}  # the corpus chapter 05 trained on
    found = rare_words.measure(lm, documents, bin_size, own_corpus=own_corpus)
    curves[f"{lm.name} tokens"], by_index[lm.name], by_frequency[lm.name], references[lm.name] = (
        found.curve,
        found.by_index,
        found.by_frequency,
        found.info["reference_tokens"],
    )
    coverage_rows.append(found.coverage)
    results.table(found.by_index, rare_words.UNUSED_BY_INDEX, spec, parameters=parameters, model_info=found.info)
    results.table(found.by_frequency, rare_words.RARE_COSINE, spec, parameters=parameters, model_info=found.info)
    print(f"{lm.name}: the reference tokens are {found.info['reference_tokens']}; {found.info['reference_seen_in_corpus']} of them occur in the corpus")
    del lm
coverage_table = pd.DataFrame(coverage_rows)
_ = results.table(coverage_table, rare_words.COVERAGE, "corpus", parameters=parameters, model_info={"name": "every model's tokenizer"})

# %% [markdown]
# ## How few tokens cover the corpus
#
# {numref}`fig-11-coverage` counts how many of the most frequent items it takes to cover a share of the corpus.

# %%
results.figure(
    rare_words.coverage_curves(curves, list(rare_words.MARKS)), "coverage", "Share of the corpus covered by the most frequent words or subword tokens."
)
ch.show(coverage_table, "Items needed to cover 30%, 50% and 98% of the corpus (ours)", precision=0)
ch.show(paper.table("bis2021", "coverage_claims"), "Biš et al. (2021) §2.2 (paper): CNN/DailyMail with WordPiece")

# %% [markdown]
# ## Never-trained tokens and the rest of the vocabulary
#
# {numref}`fig-11-unused-cosine-by-index` and {numref}`fig-11-unused-cosine-by-frequency` compare the reference tokens with the rest of the vocabulary.

# %%
results.figure(
    rare_words.binned_cosines(by_index, f"vocabulary index (bins of {bin_size})"),
    "unused_cosine_by_index",
    "Cosine between embeddings and the reference tokens, by vocabulary index.",
)
results.figure(
    rare_words.binned_cosines(by_frequency, f"frequency rank in our corpus (bins of {bin_size}; 0 = most frequent)"),
    "unused_cosine_by_frequency",
    "Cosine between embeddings and the reference tokens, by frequency rank in our corpus.",
)
ch.show(paper.table("bis2021", "unused_claims"), "Biš et al. (2021) §4.2, Fig. 3 (paper): BERT-base-cased")

# %% tags=["hide-input"]
lines = []
for name in by_index:
    f = by_frequency[name]
    full = f[f["n_tokens"] == bin_size]
    rarest = (
        f"{full['mean_cosine'].iloc[-1]:.2f} for the rarest full bin"
        if len(full) > 1
        else f"the vocabulary has only {len(f)} bin(s) of {bin_size:,}, too few to compare frequent with rare tokens"
    )
    lines.append(
        f"- **{name}** (reference: {references[name]}): mean cosine with the reference tokens {f['mean_cosine'].iloc[0]:.2f} "
        f"for the {min(bin_size, int(f['n_tokens'].iloc[0])):,} "
        f"most frequent tokens of our corpus, {rarest}; by vocabulary index it ranges from {by_index[name]['mean_cosine'].min():.2f} "
        f"to {by_index[name]['mean_cosine'].max():.2f}."
    )
row = coverage_table.set_index("unit")
ch.say(
    "**What our run shows.**\n\n"
    + "\n".join(lines)
    + "\n\n"
    + "Tokens needed for 30% / 50% / 98% of the corpus: "
    + "; ".join(f"{unit}: {r['items_for_30%']:,} / {r['items_for_50%']:,} / {r['items_for_98%']:,}" for unit, r in row.iterrows())
    + "."
)

# %% [markdown]
# ## Exercises
#
# :::{exercise} Words against subword tokens
# :label: ex-11-read
#
# In the coverage table, how many whole words and how many subword tokens of each model are
# needed for half of the corpus? Why does a subword vocabulary need fewer items for the same
# share, and which items make up the difference?
# :::

# %% [markdown]
# :::{solution-start} ex-11-read
# :class: dropdown
# :::

# %%
ch.say(
    "\n".join(
        f"- **{r['unit']}**: {r['items_for_50%']:,} items cover 50%, {r['items_for_98%']:,} cover 98% ({r['distinct']:,} distinct)."
        for _, r in coverage_table.iterrows()
    )
    + "\n\nA subword vocabulary splits rare words into pieces that also occur in other words, so its pieces are more frequent "
    "than the words they build, and punctuation and frequent suffixes count as items of their own."
)

# %% [markdown]
# :::{solution-end}
# :::

# %% [markdown]
# :::{exercise} Smaller bins
# :label: ex-11-bins
#
# Predict whether the rise of the cosine from frequent to rare tokens stays steady when the bins
# hold 500 tokens instead of 1,000, then run
# `python -m lib.edition.runner --chapters 11_rare_words -p bin_size 500`.
# :::

# %% [markdown]
# :::{solution-start} ex-11-bins
# :class: dropdown
# :::
#
# For the last model of the loop, the 500-token bins are computed here from the same matrix and
# corpus counts:

# %%
half = found.by_frequency_bins(max(1, bin_size // 2))
full = by_frequency[list(by_frequency)[-1]]
ch.say(
    f"**{list(by_frequency)[-1]}**: with bins of {bin_size:,} the mean cosine rises in {int((full['mean_cosine'].diff() > 0).sum())} of "
    f"{max(0, len(full) - 1)} steps; with bins of {max(1, bin_size // 2):,} in {int((half['mean_cosine'].diff() > 0).sum())} of {max(0, len(half) - 1)}. "
    "Smaller bins average fewer tokens, so each step of the curve is noisier; a trend from frequent to rare tokens that is real "
    "shows in both."
)

# %% [markdown]
# :::{solution-end}
# :::
