"""`python -m lib.edition`: build an edition's pages, PDF or link check (`publishing`)."""

from .publishing import main

main()
