"""The papers' experiments, one module each, above `measure`/`train` and below `book`: each returns its result tables
(declared in `schemas`), and the chapter that shows them adds prose and figures.

- `outlier_set`: the model's outlier dimensions, detected once (chapter 02) and used by every chapter that clips;
- `variants`: raw / clipped / whitened vectors per layer, and the one loop that scores them (chapters 06-09);
- `clipping_geometry` (chapter 06), `wic` (07), `sts` (08), `frozen` (09).
"""
