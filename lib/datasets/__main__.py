"""`python -m lib.datasets`: see lib/datasets/cli.py."""

from .cli import main

main()
