"""What the chapters read: sentences, pairs and labelled examples of each task, parsed from the registry's files.

Sampling policy, the same for every sampler here: a sample of n rows is drawn without replacement
from a generator seeded with `seed`; when n is at least the number of rows, the whole split is
taken (so a large n means "all"); the returned sample's size is what a chapter reports.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.checks import positive_int
from ..errors import require
from .registry import dataset, load


def _check_size(n: object) -> None:
    require(isinstance(n, (int, np.integer)) and not isinstance(n, bool) and n > 0, f"a sample size must be a positive integer, got {n!r}")


def draw(rng: np.random.Generator, n_rows: int, n: int) -> np.ndarray:
    """Row indices of a sample of min(n, n_rows) rows without replacement, in the drawn order (the module's policy)."""
    _check_size(n)
    return rng.choice(n_rows, size=min(n, n_rows), replace=False)


def subsample(frame: pd.DataFrame, n: int, seed: int) -> pd.DataFrame:
    """n rows of a table (the table as it is, if it has no more), in the drawn order, renumbered. Uses pandas' seeded
    sampling, which chapters 07 and 08 have always used; the policy is the module's."""
    _check_size(n)
    return frame if n >= len(frame) else frame.sample(n=n, random_state=seed).reset_index(drop=True)


def sample_sentences(name: str, split: str, n: int, seed: int, column: str = "sentence", avoid: tuple[int, int] | None = None) -> list[str]:
    """n sentences of a split (all, if it has fewer), in the drawn order; `avoid`: the (n, seed) of another sample of the
    same split whose sentences are left out (every row with the same text: a split may repeat one), so that a
    measurement never reuses what a selection was made on."""
    frame = load(name, split)
    rows = np.arange(len(frame))
    if avoid is not None:
        taken = frame[column].iloc[draw(np.random.default_rng(avoid[1]), len(frame), avoid[0])]
        rows = rows[~frame[column].isin(set(taken)).to_numpy()]
    return frame[column].iloc[rows[draw(np.random.default_rng(seed), len(rows), n)]].tolist()


def sst2_sentences(n: int, seed: int, avoid: tuple[int, int] | None = None) -> list[str]:
    """A seeded sample of SST-2 training sentences (the corpus of most Luo et al. measurements), announced in one line;
    `avoid`: another sample's (n, seed) whose sentences are left out (chapter 02's, where the outliers were selected)."""
    positive_int("n_sentences", n)
    sentences = sample_sentences("sst2", "train", n, seed, avoid=avoid)
    if avoid is not None:
        require(
            sentences,
            f"chapter 02 selects its outliers on {avoid[0]:,} sentences, all of SST-2's training set: none is left to measure on; lower its n_sentences",
        )
    print(f"{len(sentences):,} SST-2 training sentences (seed {seed}){f', none of the {avoid[0]:,} chapter 02 selected its outliers on' if avoid else ''}")
    return sentences


STS_SETS = ["stsb", "sick", "sickall", "sts12", "sts13", "sts14", "sts15", "sts16"]
STS_LABELS = {
    "stsb": "STS-B",
    "sick": "SICK-R",
    "sickall": "SICK-R (all pairs)",
    "sts12": "STS-12",
    "sts13": "STS-13",
    "sts14": "STS-14",
    "sts15": "STS-15",
    "sts16": "STS-16",
}


def wic(split: str) -> pd.DataFrame:
    """WiC pairs: word, pos, index1/index2 (the target's word index in each sentence), sentence1/2, same_sense."""
    data, gold = load("wic", f"{split}.data")["line"], load("wic", f"{split}.gold")["line"]
    require(len(data) == len(gold), f"wic {split}: {len(data)} pairs but {len(gold)} labels; re-fetch the release")
    rows = []
    for n, (line, label) in enumerate(zip(data, gold), start=1):
        parts = line.split("\t")
        require(
            len(parts) == 5 and "-" in parts[2] and label.strip() in ("T", "F"),
            f"wic {split}: line {n} is not word, POS, i-j, sentence1, sentence2 with a T/F label",
        )
        i, j = (int(v) for v in parts[2].split("-"))
        rows.append((parts[0], parts[1], i, j, parts[3], parts[4], label.strip() == "T"))
    return pd.DataFrame(rows, columns=["word", "pos", "index1", "index2", "sentence1", "sentence2", "same_sense"])


def sts_pairs(name: str) -> pd.DataFrame:
    """Scored sentence pairs of an STS-style set: subset, sentence1, sentence2, score.

    stsb: the STS Benchmark test split; sick: the SICK test split (SemEval_set TEST; SentEval's and the paper's),
    relatedness score; sickall: all 9,840 pairs of the SICK release (MTEB scores all pairs of its copy, 9,927 rows); sts12-16: every subset of the year's test
    set, unscored pairs (empty gold line) skipped."""
    require(name in STS_SETS, f"unknown STS set {name!r}; known: {', '.join(STS_SETS)}")
    if name in ("sick", "sickall"):
        frame = load("sick", "all")
        frame = frame[frame["SemEval_set"] == "TEST"] if name == "sick" else frame
        return pd.DataFrame(
            {
                "subset": "test" if name == "sick" else "all",
                "sentence1": frame["sentence_A"].to_numpy(),
                "sentence2": frame["sentence_B"].to_numpy(),
                "score": frame["relatedness_score"].astype(float).to_numpy(),
            }
        )
    if name == "stsb":
        rows = []
        for n, line in enumerate(load("stsb", "test")["line"], start=1):
            parts = line.split("\t")
            require(len(parts) >= 7, f"stsb test: line {n} has {len(parts)} fields, expected at least 7")
            rows.append((parts[1], parts[5], parts[6], float(parts[4])))
        return pd.DataFrame(rows, columns=["subset", "sentence1", "sentence2", "score"])
    frames = []
    for split in dataset(name).files:
        if not split.endswith(".input"):
            continue
        subset = split[: -len(".input")]
        pairs, gold = load(name, split)["line"], load(name, f"{subset}.gs")["line"]
        require(len(pairs) == len(gold), f"{name} {subset}: {len(pairs)} pairs but {len(gold)} gold lines")
        scored = [(subset, *p.split("\t")[:2], float(g)) for p, g in zip(pairs, gold) if g.strip()]
        frames.append(pd.DataFrame(scored, columns=["subset", "sentence1", "sentence2", "score"]))
    return pd.concat(frames, ignore_index=True)


def sts_training_sentences(n: int, seed: int) -> list[str]:
    """n distinct sentences of the STS Benchmark training split (all, if it has fewer; scores dropped), seeded: data for
    fitting a transform that is then applied to the scored test sets without touching them."""
    _check_size(n)
    rows = [line.split("\t") for line in load("stsb", "train")["line"]]
    sentences = pd.unique(pd.Series([p[i] for p in rows if len(p) >= 7 for i in (5, 6)]))
    return [sentences[i] for i in draw(np.random.default_rng(seed), len(sentences), n)]


CLASSIFICATION_TASKS = {"sst2": "SST-2", "imdb": "IMDB", "sst5": "SST-5"}


def classification_splits(task: str, n_train: int, n_dev: int, n_test: int, seed: int) -> dict[str, tuple[list[str], np.ndarray]]:
    """Seeded samples of (texts, integer labels) for train/dev/test. IMDB has no development split,
    so its dev sample is drawn from the training reviews, disjoint from the training sample (the
    training sample comes first when the reviews run short)."""
    require(task in CLASSIFICATION_TASKS, f"unknown task {task!r}; known: {', '.join(CLASSIFICATION_TASKS)}")
    rng = np.random.default_rng(seed)

    def sample(frame: pd.DataFrame, n: int) -> pd.DataFrame:
        return frame.iloc[draw(rng, len(frame), n)]

    if task == "imdb":
        reviews = {
            split: load("imdb", split).assign(sentence=lambda f: f["text"], label=lambda f: (f["label"] == "pos").astype(int)) for split in ("train", "test")
        }
        _check_size(n_train)
        _check_size(n_dev)
        both = sample(reviews["train"], n_train + n_dev)
        parts = {"train": both.iloc[:n_train], "dev": both.iloc[n_train:], "test": sample(reviews["test"], n_test)}
    else:
        parts = {split: sample(load(task, split), n) for split, n in (("train", n_train), ("dev", n_dev), ("test", n_test))}
    return {split: (frame["sentence"].tolist(), frame["label"].to_numpy(dtype=int)) for split, frame in parts.items()}


def unlabelled_texts(task: str, n: int, exclude: list[str], seed: int) -> list[str]:
    """n texts of a task's training split (labels dropped) that are not in exclude, seeded: data for fitting an
    unsupervised transform beside a labelled sample without reusing it."""
    require(task in CLASSIFICATION_TASKS, f"unknown task {task!r}; known: {', '.join(CLASSIFICATION_TASKS)}")
    frame = load(task, "train")
    texts = frame["text" if task == "imdb" else "sentence"]
    left = texts[~texts.isin(set(exclude))].drop_duplicates()
    require(n <= len(left), f"{task} has {len(left):,} training texts outside the samples, fewer than the {n:,} asked for; ask for fewer")
    return left.iloc[draw(np.random.default_rng(seed), len(left), n)].tolist()


GLUE_TASKS = {
    "sst2": ("SST-2", "accuracy"),
    "mrpc": ("MRPC", "f1"),
    "cola": ("CoLA", "matthews"),
    "rte": ("RTE", "accuracy"),
    "wnli": ("WNLI", "accuracy"),
    "stsb": ("STS-B", "pearson"),
}


def glue(task: str, split: str) -> pd.DataFrame:
    """A GLUE task's train or dev split as text1, text2 (empty for single sentences), label (int; STS-B a float
    score 0-5). MRPC's dev split is the MSR test file (GLUE's own dev ids are a subset of the MSR training file)."""
    require(task in GLUE_TASKS, f"unknown GLUE task {task!r}; known: {', '.join(GLUE_TASKS)}")
    require(split in ("train", "dev"), f"GLUE split must be train or dev, got {split!r}")
    if task == "sst2":
        frame = load("sst2", split)
        return pd.DataFrame({"text1": frame["sentence"], "text2": "", "label": frame["label"].astype(int)})
    if task == "cola":
        frame = load("cola", split)
        return pd.DataFrame({"text1": frame["sentence"], "text2": "", "label": frame["label"].astype(int)})
    if task in ("rte", "wnli"):
        frame = load(task, split)
        labels = frame["label"].map({"entailment": 0, "not_entailment": 1, "0": 0, "1": 1})
        require(labels.notna().all(), f"{task} {split}: labels other than entailment/not_entailment or 0/1; re-fetch the file")
        return pd.DataFrame({"text1": frame["sentence1"], "text2": frame["sentence2"], "label": labels.astype(int)})
    if task == "mrpc":
        frame = load("mrpc", "train" if split == "train" else "test")
        return pd.DataFrame({"text1": frame["#1 String"], "text2": frame["#2 String"], "label": frame["Quality"].astype(int)})
    rows = [line.split("\t") for line in load("stsb", split)["line"]]
    require(all(len(r) >= 7 for r in rows), f"stsb {split}: a line has fewer than 7 tab-separated fields; re-fetch the file")
    return pd.DataFrame({"text1": [r[5] for r in rows], "text2": [r[6] for r in rows], "label": [float(r[4]) for r in rows]})


WORD_SIMILARITY = {"simlex": "SimLex-999", "men": "MEN", "ws353_sim": "WS353-sim", "ws353_rel": "WS353-rel", "rw": "RW"}


def word_similarity(name: str) -> pd.DataFrame:
    """Word pairs with human scores: word1, word2, score. MEN is read in its natural form (the
    -n/-v/-j part-of-speech suffixes of the lemma file removed)."""
    require(name in WORD_SIMILARITY, f"unknown word-similarity set {name!r}; known: {', '.join(WORD_SIMILARITY)}")
    score_column = {"simlex": 3, "men": 2, "ws353_sim": 2, "ws353_rel": 2, "rw": 2}[name]
    rows = []
    for n, line in enumerate(load(name, "all")["line"], start=1):
        parts = line.strip().split("\t") if name != "men" else line.split()
        if not line.strip():
            continue
        require(len(parts) > score_column, f"{name}: line {n} has {len(parts)} fields; expected at least {score_column + 1}")
        w1, w2 = parts[0], parts[1]
        if name == "men":
            w1, w2 = w1.rsplit("-", 1)[0], w2.rsplit("-", 1)[0]
        rows.append((w1, w2, float(parts[score_column])))
    return pd.DataFrame(rows, columns=["word1", "word2", "score"])


def corpus_documents(collections: tuple[str, ...] = ("brown", "gutenberg")) -> list[str]:
    """The pre-training corpus as one string per file, in file order. Brown's `word/TAG` tokens are
    reduced to the word."""
    docs = []
    for key in dataset("corpus").files:
        collection = key.split("/")[0]
        if collection not in collections:
            continue
        lines = load("corpus", key)["line"]
        if collection == "brown":
            lines = [" ".join(t.rsplit("/", 1)[0] for t in line.split()) for line in lines]
        docs.append("\n".join(line for line in lines if line.strip()))
    require(len(docs) > 0, f"no corpus files for {collections}; collections are brown and gutenberg")
    return docs


def glue_samples(task: str, n_train: int, n_dev: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seeded samples of a GLUE task's train and dev splits, in file order."""
    rng = np.random.default_rng(seed)
    out = []
    for split, n in (("train", n_train), ("dev", n_dev)):
        frame = glue(task, split)
        out.append(frame.iloc[np.sort(draw(rng, len(frame), n))].reset_index(drop=True))
    return out[0], out[1]
