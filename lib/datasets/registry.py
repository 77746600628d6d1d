"""The registry of data sets: checksummed files under the data directory and their raw readers.

The data directory comes from $BOOK_DATA_DIR (default `data/`). Each data set lists the files it reads; their SHA-256
and the public commit that holds each are pinned in `lib/datasets/sources.tsv` (`pins`), and `make data` fetches them
from there (`fetch`). `origin` is where the data set was first released. Adding a data set is one `DataSet` entry, its
files' rows in sources.tsv and, if its format is new, one small reader; `tasks` turns the raw tables into what chapters use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from ..errors import require
from ..provenance import record
from ..settings import data_dir
from .pins import PINNED, SOURCES, Source, content_sha256


@dataclass(frozen=True)
class DataFile:
    path: str  # relative to the data directory
    sha256: str
    origin: str  # where the data set first published it: the file itself, or the archive that holds it

    @property
    def source(self) -> Source:
        """The public commit the book fetches it from."""
        return SOURCES[self.path]


@dataclass(frozen=True)
class DataSet:
    name: str
    description: str
    licence: str
    files: dict[str, DataFile]  # split name -> file
    reader: Callable[[Path], pd.DataFrame] = field(repr=False)
    conversion: str = ""  # how the pinned files derive from the upstream source; empty: byte-identical to it

    @property
    def published(self) -> list[str]:
        """`repository@commit` of every public commit its files are fetched from."""
        return sorted({f"{f.source.repository}@{f.source.commit}" for f in self.files.values()})


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


def _file(path: str, origin: str) -> DataFile:
    """A data file with the checksum pinned in lib/datasets/sources.tsv."""
    return DataFile(path, PINNED[path], origin)


_SENTEVAL_SST2 = "https://raw.githubusercontent.com/PrincetonML/SIF/master/data/sentiment-{}"
_SST5 = "https://raw.githubusercontent.com/AcademiaSinicaNLPLab/sentiment_dataset/master/data/stsa.fine.{}"
_STS_ARCHIVES = {  # as fetched by SentEval's data script
    "sts12": ("STS12-en-test", "http://ixa2.si.ehu.es/stswiki/images/4/40/STS2012-en-test.zip"),
    "sts13": ("STS13-en-test", "http://ixa2.si.ehu.es/stswiki/images/2/2f/STS2013-en-test.zip"),
    "sts14": ("STS14-en-test", "http://ixa2.si.ehu.es/stswiki/images/8/8c/STS2014-en-test.zip"),
    "sts15": ("STS15-en-test", "http://ixa2.si.ehu.es/stswiki/images/d/da/STS2015-en-test.zip"),
    "sts16": ("STS16-en-test", "http://ixa2.si.ehu.es/stswiki/images/9/98/STS2016-en-test.zip"),
}


_SENTEVAL_STS = (
    "as SentEval's data script (data/downstream/get_transfer_data.bash) leaves them: the archive's STS.input files "
    "tokenized with its tokenizer.sed, the STS.gs files as published"
)
_CORPUS = (
    "NLTK's Brown and Gutenberg corpora as tokenized text, one sentence per line with spaces between tokens (Brown as "
    "word/TAG pairs in upper-case tags), byte-identical to the plain-text copies of the commit they are fetched from"
)


def _sts_year(name: str) -> DataSet:
    folder, url = _STS_ARCHIVES[name]
    subsets = sorted(p.split("/STS.input.")[1][:-4] for p in PINNED if p.startswith(f"sts/{folder}/STS.input."))
    files = {}
    for subset in subsets:
        files[f"{subset}.input"] = _file(f"sts/{folder}/STS.input.{subset}.txt", url)
        files[f"{subset}.gs"] = _file(f"sts/{folder}/STS.gs.{subset}.txt", url)
    conversion = _SENTEVAL_STS + ("; without the SMT subset's sentences, which are not redistributed" if name == "sts13" else "")
    return DataSet(
        name, f"STS 20{name[3:]} test subsets ({', '.join(subsets)}), SentEval layout", "see the archive's 00-readme.txt", files, _read_lines, conversion
    )


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
        files={split: _file(f"imdb/{split}.tsv.gz", "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz") for split in ("train", "test")},
        reader=_read_tsv,
        conversion=(
            "the reviews of aclImdb/{train,test}/{neg,pos}/*.txt as gzip-compressed TSV rows label, file, text: test all 25,000, "
            "train the 20,000 (10,000 per class) that its `file` column names"
        ),
    ),
    "wic": DataSet(
        name="wic",
        description="Word-in-Context (Pilehvar & Camacho-Collados 2019), official release",
        licence="CC BY-NC 4.0",
        files={
            f"{split}.{part}": _file(f"wic/{split}/{split}.{part}.txt", "https://pilehvar.github.io/wic/package/WiC_dataset.zip")
            for split in ("train", "dev")
            for part in ("data", "gold")
        },
        reader=_read_lines,
    ),
    "stsb": DataSet(
        name="stsb",
        description="STS Benchmark (Cer et al. 2017)",
        licence="CC BY-SA 4.0 (scores)",
        files={
            split: _file(f"sts/STSBenchmark/sts-{split}.csv", "http://ixa2.si.ehu.es/stswiki/images/4/48/Stsbenchmark.tar.gz")
            for split in ("train", "dev", "test")
        },
        reader=_read_lines,
    ),
    "sick": DataSet(
        name="sick",
        description="SICK (Marelli et al. 2014), relatedness scores 1-5",
        licence="CC BY-NC-SA 3.0",
        files={"all": _file("sick/SICK.txt", "https://zenodo.org/record/2787612/files/SICK.zip")},
        reader=_read_tsv,
    ),
    **{name: _sts_year(name) for name in _STS_ARCHIVES},
    **{
        name: DataSet(name, description, "free for research", {"all": _file(f"wordsim/{path}", url)}, _read_lines)
        for name, (path, url, description) in {
            "simlex": ("SimLex-999.txt", "https://fh295.github.io/SimLex-999.zip", "SimLex-999 (Hill et al. 2015)"),
            "men": ("MEN_dataset_lemma_form_full", "https://staff.fnwi.uva.nl/e.bruni/resources/MEN", "MEN (Bruni et al. 2014), lemma form"),
            "ws353_sim": ("wordsim_similarity_goldstandard.txt", "http://alfonseca.org/pubs/ws353simrel.tar.gz", "WordSim353 similarity (Agirre et al. 2009)"),
            "ws353_rel": (
                "wordsim_relatedness_goldstandard.txt",
                "http://alfonseca.org/pubs/ws353simrel.tar.gz",
                "WordSim353 relatedness (Agirre et al. 2009)",
            ),
            "rw": ("rw.txt", "https://nlp.stanford.edu/~lmthang/morphoNLM/rw.zip", "Stanford Rare Words (Luong et al. 2013)"),
        }.items()
    },
    **{
        task.lower(): DataSet(
            task.lower(),
            f"{task} (GLUE)",
            "see the GLUE task's licence",
            {split: _file(f"glue/{task}/{split}.tsv", f"https://dl.fbaipublicfiles.com/glue/data/{task}.zip") for split in ("train", "dev")},
            reader,
        )
        for task, reader in (
            ("CoLA", lambda p: pd.read_csv(p, sep="\t", quoting=3, header=None, names=["source", "label", "original", "sentence"])),
            ("RTE", _read_tsv),
            ("WNLI", _read_tsv),
        )
    },
    "mrpc": DataSet(
        "mrpc",
        "MRPC (Dolan & Brockett 2005), original MSR train/test files as SentEval and GLUE fetch them",
        "see the MSR release (https://www.microsoft.com/en-us/download/details.aspx?id=52398)",
        {
            split: _file(f"glue/MRPC/msr_paraphrase_{split}.txt", f"https://dl.fbaipublicfiles.com/senteval/senteval_data/msr_paraphrase_{split}.txt")
            for split in ("train", "test")
        },
        lambda p: pd.read_csv(p, sep="\t", quoting=3, dtype=str, keep_default_na=False, encoding="utf-8-sig"),
    ),
    "corpus": DataSet(
        name="corpus",
        description="pre-training text: the Brown corpus (POS tags stripped on reading) and 17 Gutenberg books",
        licence="Brown: research use; Gutenberg: public domain",
        files={p.removeprefix("corpus/").removesuffix(".txt"): _file(p, "https://www.nltk.org/nltk_data/") for p in sorted(PINNED) if p.startswith("corpus/")},
        reader=_read_lines,
        conversion=_CORPUS,
    ),
}

_verified: dict[tuple[str, int, int], str] = {}


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
    require(path.is_file(), f"{name} {split}: missing file {path}; run `make data` to fetch it from {spec.source.where}, or set BOOK_DATA_DIR")
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    if _verified.get(key) != spec.sha256:
        digest = content_sha256(path, spec.source.converted)
        require(
            digest == spec.sha256,
            f"{name} {split}: {path} has checksum {digest[:12] or 'of no whole file'}…, expected {spec.sha256[:12]}…; "
            f"the file is corrupted or a different release: delete it and run `make data` (it is published at {spec.source.where})",
        )
        _verified[key] = digest
    record("data", path, spec.path)
    return path


def load(name: str, split: str) -> pd.DataFrame:
    """Read one split of a registered data set as a DataFrame, checksum verified."""
    return dataset(name).reader(verified_path(name, split))
