"""The book around the computations: the chapter `runner`, notebook helpers (`chapter`), `results` files, the papers' numbers (`paper`), `plotting`."""
