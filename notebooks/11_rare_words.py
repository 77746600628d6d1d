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
# **Overview.** Do the tokens that training rarely or never updates drift together, away from the frequent ones,
# and how few tokens cover most of a corpus?
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
# Here the corpus is the book's pre-training corpus (texts of the Brown corpus and of Project Gutenberg; the part
# this edition counts and its size are printed below), tokenized with each model's own tokenizer. MiniLM keeps
# BERT-uncased's vocabulary, `[unused]` tokens included. For a vocabulary without them the paper
# takes RoBERTa's last 1,000 tokens; in a byte-level BPE vocabulary those are the rarest merges,
# ordinary tokens that did occur in training, so the book calls them *reference tokens* and keeps
# "never trained" for tokens that truly never occurred: the `[unused]` tokens, and for the book's
# own models ({doc}`chapter 05 <05_pretraining>`), the ids that never occur in the corpus they were trained on (when the
# whole corpus is counted). The cosine is shown in consecutive bins of tokens (the paper's hold 1,000)
# ordered two ways: by **vocabulary index** (the paper's axis; in BERT's WordPiece
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
import lib.book.chapter as ch
from lib.experiments import rare_words

specs, results = ch.begin("11_rare_words", profile, models)
corpus = rare_words.corpus(collections, bin_size)
parameters = ch.parameters("11_rare_words", globals())

# %%
settings = dict(bin_size=bin_size, device=device, dtype=dtype)
runs = ch.each_model(rare_words.run, specs, corpus=corpus, results=results, parameters=parameters, **settings)
coverage = rare_words.coverage(runs, corpus, results, parameters)

# %% [markdown]
# ## How few tokens cover the corpus
#
# {numref}`fig-11-coverage` counts how many of the most frequent items it takes to cover a share of the corpus.

# %% tags=["hide-input"]
rare_words.figure_coverage(runs, corpus, results)
ch.show(coverage, "Items needed to cover 30%, 50% and 98% of the corpus (ours)", precision=0)
ch.show(rare_words.paper_table("coverage_claims"), "Biš et al. (2021) §2.2 (paper): CNN/DailyMail with WordPiece")

# %% [markdown]
# ## Never-trained tokens and the rest of the vocabulary
#
# {numref}`fig-11-unused-cosine-by-index` and {numref}`fig-11-unused-cosine-by-frequency` compare the reference tokens with the rest of the vocabulary.

# %% tags=["hide-input"]
rare_words.figure_by_index(runs, bin_size, results)
rare_words.figure_by_frequency(runs, bin_size, results)
ch.show(rare_words.paper_table("unused_claims"), "Biš et al. (2021) §4.2, Fig. 3 (paper): BERT-base-cased, mean cosine by vocabulary index")

# %% tags=["hide-input"]
ch.findings(rare_words.findings(runs, coverage, bin_size))

# %% tags=["hide-input"]
ch.answer(rare_words.answer(runs, coverage, bin_size))

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

# %% tags=["hide-input"]
ch.say(rare_words.coverage_lines(coverage))

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
# For the last model, bins of half the size are computed here from the same matrix and
# corpus counts:

# %% tags=["hide-input"]
ch.say(rare_words.bin_size_effect(runs, bin_size))

# %% [markdown]
# :::{solution-end}
# :::
