"""`python -m lib.datasets check|download [NAME ...]`: verify or fetch the data sets."""

from .registry import main

main()
