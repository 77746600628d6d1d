"""Shared code of the book: models, data, extraction, statistics, metrics, plotting, results."""

__version__ = "0.1.0"
