"""Measures on vectors and weights: `outliers`, `geometry`, `isotropy`, `positional`, `transforms`, `vocabulary`, `metrics`."""
