"""Shared code of the book, one folder per stage; every chapter calls into it.

errors     BookError and the one-line command-line wrapper
settings   where data, cache, results and models live; device and dtype
io         atomic file and folder writes, SHA-256 of files
provenance what a chapter run read and wrote, recorded for the book build
codehash   digests of Python code (not comments or docstrings) that key cached results
datasets/  registry (checksummed files, download CLI), tasks (per-task readers, sampling), glove
encode/    models (load a spec), extraction (batched hidden states), collectors (streaming statistics), words
measure/   outliers, geometry, isotropy, positional, transforms, vocabulary, metrics
train/     probe, bpe, pretrain, finetune, calibration
book/      sources (chapter files and their parameters cells), profiles (what a profile changes, checked),
           reference (the parameter reference), runner (papermill), cache (when a chapter is reused),
           edition (one per profile: staging, build report, HTML, publish), exercises (and their solutions),
           launch (Binder and Colab notebooks and links), scorecard (claims tested on results), chapter (notebook helpers),
           results, figures (numbered figures on the pages), paper (the papers' numbers beside ours), plotting
"""

__version__ = "0.2.0"
