"""Data: the checksummed registry of files (`registry`), per-task readers and sampling (`tasks`), GloVe vectors (`glove`)."""
