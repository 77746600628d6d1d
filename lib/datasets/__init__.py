"""Data: the pinned files and the commits that publish them (`pins`), their fetch (`fetch`, `imdb`; `release` for an
optional archive; `install`, which a build calls, for either), the checksummed registry of data sets (`registry`),
per-task readers and sampling (`tasks`), GloVe vectors (`glove`), the paper profile's Wikipedia corpus (`wikipedia`)."""
