"""Shared code of the book, in layers; a module imports only from its own layer and the ones listed before it.

base         errors, settings, io, processes, provenance, codehash, codegraph: one-line errors, where things live,
             atomic writes, the processes a build starts, what a run read and wrote, digests of code and what code a
             cached result depends on
core/        what a chapter is: sources (chapters and their parameters cells), declaration, checks, profiles, store
             (the results store), paper (the papers' numbers)
datasets/    registry, pins and fetch (checksummed files from their public commits), tasks (readers, sampling), glove
encode/      models (load a spec), extraction (batched hidden states), collectors (streaming statistics), words
measure/     outliers, geometry, isotropy, positional, transforms, vocabulary, metrics, inference
train/       probe, bpe, masked_lm, finetune, calibration, distributed, workers
experiments/ one module per chapter (its runs, tables, figures, findings and verdict rules), and what chapters share
book/        what a chapter calls: chapter (notebook helpers), results, tables, scorecard_view
edition/     how the book is built, imported by nothing else: runner, cache, staging, publishing, reference, exercises
"""

import os as _os
from pathlib import Path as _Path

__version__ = "0.2.0"

_expected = _os.environ.get("BOOK_LIB_ROOT")  # set by the book build: the checkout whose code keys its cache
if _expected and _Path(__file__).resolve().parent.parent != _Path(_expected).resolve():
    raise ImportError(
        f"this process imported lib from {_Path(__file__).resolve().parent} but the book build keys its cache on {_expected}/lib; "
        "run the build from the checkout whose lib you installed, or reinstall it there (pip install -e .)"
    )
