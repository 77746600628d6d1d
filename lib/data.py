"""Data sets: a registry of checksummed files under the data directory, and their loaders.

The data directory comes from $BOOK_DATA_DIR (default `data/`). Each data set lists the files it
reads with their SHA-256 and where they are published; `python -m lib.data download NAME` (or
`make data`) fetches them for users who are online. Adding a data set is one `DataSet` entry and,
if its format is new, one small reader.
"""

from __future__ import annotations

import argparse
import hashlib
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from .errors import BookError, cli, require
from .results import write_atomic
from .settings import data_dir


@dataclass(frozen=True)
class DataFile:
    path: str  # relative to the data directory
    sha256: str
    url: str  # where it is published: the file itself, or the archive that holds it
    archive: bool = False  # url is an archive (zip/tar) to download and unpack by hand


@dataclass(frozen=True)
class DataSet:
    name: str
    description: str
    licence: str
    files: dict[str, DataFile]  # split name -> file
    reader: Callable[[Path], pd.DataFrame] = field(repr=False)


def _read_tab_sentence_label(path: Path) -> pd.DataFrame:
    """SentEval SST layout: `sentence<TAB>label` per line."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            line = line.rstrip("\n")
            if not line:
                continue
            sentence, sep, label = line.rpartition("\t")
            require(sep == "\t" and label.strip().lstrip("-").isdigit(), f"{path}: line {n} is not 'sentence<TAB>label'; re-fetch the file with `make data`")
            rows.append((sentence.strip(), int(label)))
    return pd.DataFrame(rows, columns=["sentence", "label"])


def _read_label_space_sentence(path: Path) -> pd.DataFrame:
    """SST-5 layout: `label<SPACE>sentence` per line."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, start=1):
            label, _, sentence = line.strip().partition(" ")
            if not line.strip():
                continue
            require(label.isdigit() and sentence, f"{path}: line {n} is not 'label<SPACE>sentence'; re-fetch the file")
            rows.append((sentence, int(label)))
    return pd.DataFrame(rows, columns=["sentence", "label"])


def _read_lines(path: Path) -> pd.DataFrame:
    """One row per line, unparsed (formats whose lines are combined across files, e.g. STS input + gold)."""
    return pd.DataFrame({"line": path.read_text(encoding="utf-8").splitlines()})


def _read_tsv(path: Path) -> pd.DataFrame:
    """A tab-separated file with a header row (optionally gzip-compressed), quotes taken literally."""
    return pd.read_csv(path, sep="\t", quoting=3, dtype=str, keep_default_na=False)


_PINNED = dict(reversed(line.split()) for line in (Path(__file__).with_name("checksums.sha256")).read_text().splitlines() if line.strip())


def _file(path: str, url: str, archive: bool = False) -> DataFile:
    """A data file with the checksum pinned in lib/checksums.sha256."""
    return DataFile(path, _PINNED[path], url, archive)


_SENTEVAL_SST2 = "https://raw.githubusercontent.com/PrincetonML/SIF/master/data/sentiment-{}"
_SST5 = "https://raw.githubusercontent.com/AcademiaSinicaNLPLab/sentiment_dataset/master/data/stsa.fine.{}"
_STS_ARCHIVES = {  # as fetched by SentEval's data script
    "sts12": ("STS12-en-test", "http://ixa2.si.ehu.es/stswiki/images/4/40/STS2012-en-test.zip"),
    "sts13": ("STS13-en-test", "http://ixa2.si.ehu.es/stswiki/images/2/2f/STS2013-en-test.zip"),
    "sts14": ("STS14-en-test", "http://ixa2.si.ehu.es/stswiki/images/8/8c/STS2014-en-test.zip"),
    "sts15": ("STS15-en-test", "http://ixa2.si.ehu.es/stswiki/images/d/da/STS2015-en-test.zip"),
    "sts16": ("STS16-en-test", "http://ixa2.si.ehu.es/stswiki/images/9/98/STS2016-en-test.zip"),
}


def _sts_year(name: str) -> DataSet:
    folder, url = _STS_ARCHIVES[name]
    subsets = sorted(p.split("/STS.input.")[1][:-4] for p in _PINNED if p.startswith(f"sts/{folder}/STS.input."))
    files = {}
    for subset in subsets:
        files[f"{subset}.input"] = _file(f"sts/{folder}/STS.input.{subset}.txt", url, archive=True)
        files[f"{subset}.gs"] = _file(f"sts/{folder}/STS.gs.{subset}.txt", url, archive=True)
    return DataSet(name, f"STS 20{name[3:]} test subsets ({', '.join(subsets)}), SentEval layout", "see the release's readme", files, _read_lines)

REGISTRY: dict[str, DataSet] = {
    "sst2": DataSet(
        name="sst2",
        description="SST-2 (Socher et al. 2013), binary sentiment, SentEval/GLUE split",
        licence="research use (Stanford)",
        files={split: _file(f"sst2/sentiment-{split}", _SENTEVAL_SST2.format(split)) for split in ("train", "dev", "test")},
        reader=_read_tab_sentence_label,
    ),
    "sst5": DataSet(
        name="sst5",
        description="SST-5 (Socher et al. 2013), fine-grained sentiment, labels 0-4",
        licence="research use (Stanford)",
        files={split: _file(f"sst5/sentiment-{split}", _SST5.format(split)) for split in ("train", "dev", "test")},
        reader=_read_label_space_sentence,
    ),
    "imdb": DataSet(
        name="imdb",
        description="IMDB movie reviews (Maas et al. 2011): 20,000 of the 25,000 training reviews, all 25,000 test reviews, as tsv.gz",
        licence="research use",
        files={split: _file(f"imdb/{split}.tsv.gz", "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz", archive=True)
               for split in ("train", "test")},
        reader=_read_tsv,
    ),
    "wic": DataSet(
        name="wic",
        description="Word-in-Context (Pilehvar & Camacho-Collados 2019), official release",
        licence="CC BY-NC 4.0",
        files={f"{split}.{part}": _file(f"wic/{split}/{split}.{part}.txt", "https://pilehvar.github.io/wic/package/WiC_dataset.zip", archive=True)
               for split in ("train", "dev") for part in ("data", "gold")},
        reader=_read_lines,
    ),
    "stsb": DataSet(
        name="stsb",
        description="STS Benchmark (Cer et al. 2017)",
        licence="CC BY-SA 4.0 (scores)",
        files={split: _file(f"sts/STSBenchmark/sts-{split}.csv", "http://ixa2.si.ehu.es/stswiki/images/4/48/Stsbenchmark.tar.gz", archive=True)
               for split in ("train", "dev", "test")},
        reader=_read_lines,
    ),
    "sick": DataSet(
        name="sick",
        description="SICK (Marelli et al. 2014), relatedness scores 1-5",
        licence="CC BY-NC-SA 3.0",
        files={"all": _file("sick/SICK.txt", "https://zenodo.org/record/2787612/files/SICK.zip", archive=True)},
        reader=_read_tsv,
    ),
    **{name: _sts_year(name) for name in _STS_ARCHIVES},
    **{name: DataSet(name, description, "free for research", {"all": _file(f"wordsim/{path}", url, archive=True)}, _read_lines)
       for name, (path, url, description) in {
           "simlex": ("SimLex-999.txt", "https://fh295.github.io/SimLex-999.zip", "SimLex-999 (Hill et al. 2015)"),
           "men": ("MEN_dataset_lemma_form_full", "https://staff.fnwi.uva.nl/e.bruni/resources/MEN", "MEN (Bruni et al. 2014), lemma form"),
           "ws353_sim": ("wordsim_similarity_goldstandard.txt", "http://alfonseca.org/pubs/ws353simrel.tar.gz", "WordSim353 similarity (Agirre et al. 2009)"),
           "ws353_rel": ("wordsim_relatedness_goldstandard.txt", "http://alfonseca.org/pubs/ws353simrel.tar.gz", "WordSim353 relatedness (Agirre et al. 2009)"),
           "rw": ("rw.txt", "https://nlp.stanford.edu/~lmthang/morphoNLM/rw.zip", "Stanford Rare Words (Luong et al. 2013)"),
       }.items()},
    **{task.lower(): DataSet(task.lower(), f"{task} (GLUE)", "see the GLUE task's licence",
                             {split: _file(f"glue/{task}/{split}.tsv", f"https://dl.fbaipublicfiles.com/glue/data/{task}.zip", archive=True)
                              for split in ("train", "dev")}, reader)
       for task, reader in (("CoLA", lambda p: pd.read_csv(p, sep="\t", quoting=3, header=None, names=["source", "label", "original", "sentence"])),
                            ("RTE", _read_tsv), ("WNLI", _read_tsv))},
    "mrpc": DataSet("mrpc", "MRPC (Dolan & Brockett 2005), original MSR train/test files", "see the MSR release",
                    {split: _file(f"glue/MRPC/msr_paraphrase_{split}.txt", "https://www.microsoft.com/en-us/download/details.aspx?id=52398", archive=True)
                     for split in ("train", "test")},
                    lambda p: pd.read_csv(p, sep="\t", quoting=3, dtype=str, keep_default_na=False, encoding="utf-8-sig")),
    "corpus": DataSet(
        name="corpus",
        description="pre-training text: the Brown corpus (POS tags stripped on reading) and 17 Gutenberg books",
        licence="Brown: research use; Gutenberg: public domain",
        files={p.removeprefix("corpus/").removesuffix(".txt"): _file(p, "https://www.nltk.org/nltk_data/", archive=True)
               for p in sorted(_PINNED) if p.startswith("corpus/")},
        reader=_read_lines,
    ),
}

_verified: dict[tuple[str, int, int], str] = {}


def sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(1 << 22):
            h.update(block)
    return h.hexdigest()


def dataset(name: str) -> DataSet:
    require(name in REGISTRY, f"unknown data set {name!r}; known: {', '.join(sorted(REGISTRY))}")
    return REGISTRY[name]


def verified_path(name: str, split: str) -> Path:
    """Path of a data file after checking that it exists and has the pinned checksum."""
    ds = dataset(name)
    require(split in ds.files, f"data set {name!r} has no split {split!r}; splits: {', '.join(ds.files)}")
    spec = ds.files[split]
    root = data_dir()
    require(root.is_dir(), f"data directory {root} does not exist; set BOOK_DATA_DIR to the folder holding the data sets, or run `make data` to download them")
    path = root / spec.path
    require(path.is_file(), f"{name} {split}: missing file {path}; it is published at {spec.url} (run `make data`, or set BOOK_DATA_DIR)")
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if _verified.get(key) != spec.sha256:
        digest = sha256(path)
        require(digest == spec.sha256, f"{name} {split}: {path} has checksum {digest[:12]}…, expected {spec.sha256[:12]}…; the file is corrupted or a different release: re-fetch it from {spec.url}")
        _verified[key] = digest
    return path


def load(name: str, split: str) -> pd.DataFrame:
    """Read one split of a registered data set as a DataFrame, checksum verified."""
    return dataset(name).reader(verified_path(name, split))


def sample_sentences(name: str, split: str, n: int, seed: int, column: str = "sentence") -> list[str]:
    """n sentences drawn without replacement (seeded) from a split, in the drawn order."""
    frame = load(name, split)
    require(isinstance(n, (int, np.integer)) and n > 0, f"number of sentences must be a positive integer, got {n!r}")
    require(n <= len(frame), f"{name} {split} has {len(frame)} sentences; asked for {n}: lower the sample size")
    rows = np.random.default_rng(seed).choice(len(frame), size=n, replace=False)
    return frame[column].iloc[rows].tolist()


STS_SETS = ["stsb", "sick", "sts12", "sts13", "sts14", "sts15", "sts16"]
STS_LABELS = {"stsb": "STS-B", "sick": "SICK-R", "sts12": "STS-12", "sts13": "STS-13", "sts14": "STS-14", "sts15": "STS-15", "sts16": "STS-16"}


def wic(split: str) -> pd.DataFrame:
    """WiC pairs: word, pos, index1/index2 (the target's word index in each sentence), sentence1/2, same_sense."""
    data, gold = load("wic", f"{split}.data")["line"], load("wic", f"{split}.gold")["line"]
    require(len(data) == len(gold), f"wic {split}: {len(data)} pairs but {len(gold)} labels; re-fetch the release")
    rows = []
    for n, (line, label) in enumerate(zip(data, gold), start=1):
        parts = line.split("\t")
        require(len(parts) == 5 and "-" in parts[2] and label.strip() in ("T", "F"), f"wic {split}: line {n} is not word, POS, i-j, sentence1, sentence2 with a T/F label")
        i, j = (int(v) for v in parts[2].split("-"))
        rows.append((parts[0], parts[1], i, j, parts[3], parts[4], label.strip() == "T"))
    return pd.DataFrame(rows, columns=["word", "pos", "index1", "index2", "sentence1", "sentence2", "same_sense"])


def sts_pairs(name: str) -> pd.DataFrame:
    """Scored sentence pairs of an STS-style set: subset, sentence1, sentence2, score.

    stsb: the STS Benchmark test split; sick: the SICK test split (SemEval_set TEST), relatedness
    score; sts12-16: every subset of the year's test set, unscored pairs (empty gold line) skipped."""
    require(name in STS_SETS, f"unknown STS set {name!r}; known: {', '.join(STS_SETS)}")
    if name == "sick":
        frame = load("sick", "all")
        frame = frame[frame["SemEval_set"] == "TEST"]
        return pd.DataFrame({"subset": "test", "sentence1": frame["sentence_A"].to_numpy(), "sentence2": frame["sentence_B"].to_numpy(),
                             "score": frame["relatedness_score"].astype(float).to_numpy()})
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


CLASSIFICATION_TASKS = {"sst2": "SST-2", "imdb": "IMDB", "sst5": "SST-5"}


def classification_splits(task: str, n_train: int, n_dev: int, n_test: int, seed: int) -> dict[str, tuple[list[str], np.ndarray]]:
    """Seeded samples of (texts, integer labels) for train/dev/test. IMDB has no development split,
    so its dev sample is drawn from the training reviews, disjoint from the training sample."""
    require(task in CLASSIFICATION_TASKS, f"unknown task {task!r}; known: {', '.join(CLASSIFICATION_TASKS)}")
    require(min(n_train, n_dev, n_test) > 0, "sample sizes must be positive")
    rng = np.random.default_rng(seed)

    def draw(frame: pd.DataFrame, n: int, what: str) -> pd.DataFrame:
        require(n <= len(frame), f"{CLASSIFICATION_TASKS[task]} {what} has {len(frame)} examples; asked for {n}: lower the sample size")
        return frame.iloc[rng.choice(len(frame), size=n, replace=False)]

    if task == "imdb":
        pool = load("imdb", "train").assign(sentence=lambda f: f["text"], label=lambda f: (f["label"] == "pos").astype(int))
        both = draw(pool, n_train + n_dev, "train")
        parts = {"train": both.iloc[:n_train], "dev": both.iloc[n_train:],
                 "test": draw(load("imdb", "test").assign(sentence=lambda f: f["text"], label=lambda f: (f["label"] == "pos").astype(int)), n_test, "test")}
    else:
        parts = {split: draw(load(task, split), n, split) for split, n in (("train", n_train), ("dev", n_dev), ("test", n_test))}
    return {split: (frame["sentence"].tolist(), frame["label"].to_numpy(dtype=int)) for split, frame in parts.items()}


GLUE_TASKS = {"sst2": ("SST-2", "accuracy"), "mrpc": ("MRPC", "f1"), "cola": ("CoLA", "matthews"), "rte": ("RTE", "accuracy"),
              "wnli": ("WNLI", "accuracy"), "stsb": ("STS-B", "pearson")}


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


def _download(spec: DataFile, label: str, tmp: Path) -> None:
    """Fetch spec.url to tmp and check its checksum."""
    urllib.request.urlretrieve(spec.url, tmp)
    digest = sha256(tmp)
    require(digest == spec.sha256, f"{label}: downloaded {spec.url} has checksum {digest[:12]}…, expected {spec.sha256[:12]}…; the published file changed: please report it")


def download(name: str, root: Path | None = None) -> list[Path]:
    """Fetch a data set's files into the data directory (online users); verify checksums; atomic."""
    root = root or data_dir()
    done = []
    for split, spec in dataset(name).files.items():
        target = root / spec.path
        if target.is_file() and sha256(target) == spec.sha256:
            done.append(target)
            continue
        require(not spec.archive, f"{name} {split}: {spec.path} is published inside the archive {spec.url}; download and unpack it "
                f"so that {target} exists (the README of the data folder gives the layout), then run `python -m lib.data check {name}`")
        try:
            write_atomic(target, partial(_download, spec, f"{name} {split}"))
        except OSError as err:
            raise BookError(f"{name} {split}: could not download {spec.url} ({err}); check the connection or copy the file to {target}") from err
        done.append(target)
    return done


@cli
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m lib.data", description="Check or download the book's data sets.")
    parser.add_argument("action", choices=["check", "download"])
    parser.add_argument("names", nargs="*", help="data sets (default: all)")
    args = parser.parse_args(argv)
    for name in args.names or sorted(REGISTRY):
        if args.action == "download":
            download(name)
        for split in dataset(name).files:
            print(f"ok  {name:8s} {split:24s} {verified_path(name, split)}")


if __name__ == "__main__":
    main()


def glue_samples(task: str, n_train: int, n_dev: int, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seeded samples (in file order) of a GLUE task's train and dev splits; a size above a split's length takes it all."""
    rng = np.random.default_rng(seed)
    out = []
    for split, n in (("train", n_train), ("dev", n_dev)):
        frame = glue(task, split)
        rows = np.sort(rng.choice(len(frame), size=min(n, len(frame)), replace=False))
        out.append(frame.iloc[rows].reset_index(drop=True))
    return out[0], out[1]
