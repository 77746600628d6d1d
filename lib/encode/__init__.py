"""Encoding: loading models (`models`), batched extraction of hidden states (`extraction`), streaming collectors
(`collectors`), words inside sentences (`words`)."""
