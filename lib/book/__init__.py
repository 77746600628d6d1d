"""The book around the computations: chapter `sources` and their parameters cells, the chapter `runner`, notebook
helpers (`chapter`), `results` files, the papers' numbers (`paper`), `plotting`."""
