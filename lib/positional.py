"""Where outliers come from (Luo et al. 2021, §3): the embedding tables (position, token, segment),
the LayerNorm gains and biases, and per-position averages from the embedding LayerNorm's input up
through the first layers. Everything is read from the loaded model; nothing is model-specific."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from .errors import BookError, require
from .extraction import TokenBatch
from .models import LoadedModel
from .outliers import robust_z


@dataclass
class EmbeddingTables:
    """The input embedding tables as float64 arrays. position_offset is the table row that sequence
    position 0 reads (0 for BERT; padding id + 1 for RoBERTa/MPNet, which skip rows for padding)."""

    token: np.ndarray
    position: np.ndarray | None
    segment: np.ndarray | None
    position_offset: int


def _embeddings_module(lm: LoadedModel) -> torch.nn.Module:
    module = getattr(lm.model, "embeddings", None)
    require(module is not None, f"{lm.name} has no `embeddings` module (BERT/RoBERTa/MPNet-style encoders have one); "
            "this analysis needs an encoder with learned input embeddings")
    return module


def position_offset(lm: LoadedModel) -> int:
    """The position-table row used for sequence position 0, observed by running the embeddings on a short input."""
    table = getattr(_embeddings_module(lm), "position_embeddings", None)
    require(isinstance(table, torch.nn.Embedding), f"{lm.name} has no learned position-embedding table")
    seen: list[torch.Tensor] = []
    handle = table.register_forward_pre_hook(lambda module, args: seen.append(args[0].detach()))
    try:
        ids = lm.tokenizer("a b c", return_tensors="pt")["input_ids"].to(lm.device)
        with torch.inference_mode():
            lm.model(input_ids=ids)
    finally:
        handle.remove()
    require(len(seen) > 0, f"{lm.name} did not read its position-embedding table in a forward pass")
    return int(seen[0].reshape(-1)[0])


def embedding_tables(lm: LoadedModel) -> EmbeddingTables:
    """The model's token, position and segment (token-type) embedding matrices."""
    emb = _embeddings_module(lm)

    def weights(name: str) -> np.ndarray | None:
        table = getattr(emb, name, None)
        return table.weight.detach().double().cpu().numpy() if isinstance(table, torch.nn.Embedding) else None

    position = weights("position_embeddings")
    return EmbeddingTables(weights("word_embeddings"), position, weights("token_type_embeddings"),
                           position_offset(lm) if position is not None else 0)


def row_outliers(matrix: np.ndarray, z_threshold: float = 10.0) -> pd.DataFrame:
    """Per row (e.g. per position embedding): the dimensions at least z_threshold robust standard
    deviations from that row's median, the largest |z|, and the row's argmin and argmax."""
    z = robust_z(matrix)
    flags = np.abs(z) >= z_threshold
    return pd.DataFrame({
        "row": np.arange(len(matrix)),
        "n_flagged": flags.sum(axis=1),
        "flagged_dims": [" ".join(map(str, np.flatnonzero(f))) for f in flags],
        "max_abs_z": np.abs(z).max(axis=1),
        "argmin_dim": matrix.argmin(axis=1), "argmax_dim": matrix.argmax(axis=1),
    })


def extreme_share(matrix: np.ndarray) -> dict[str, float | int]:
    """The dimension that is most often a row's maximum (minimum), and the % of rows for which it is."""
    require(len(matrix) > 0, "no rows to count")
    out: dict[str, float | int] = {"n_rows": len(matrix)}
    for kind, idx in (("argmax", matrix.argmax(axis=1)), ("argmin", matrix.argmin(axis=1))):
        counts = np.bincount(idx, minlength=matrix.shape[1])
        out[f"{kind}_dim"], out[f"{kind}_percent"] = int(counts.argmax()), 100.0 * counts.max() / len(matrix)
    return out


def table_summary(tables: EmbeddingTables, z_threshold: float = 10.0, n_positions: int | None = None) -> pd.DataFrame:
    """One row per embedding table: rows with a flagged dimension, and the most frequent argmax/argmin.
    Position rows are those sequences use (from the offset on, at most n_positions); the position
    table is also counted without its first used row (the [CLS]/<s> position)."""
    parts = [("token", tables.token)]
    if tables.position is not None:
        stop = None if n_positions is None else tables.position_offset + n_positions
        used = tables.position[tables.position_offset:stop]
        parts += [("position", used), ("position after the first", used[1:])]
    if tables.segment is not None:
        parts.append(("segment", tables.segment))
    rows = []
    for name, matrix in parts:
        flagged = row_outliers(matrix, z_threshold)["n_flagged"] > 0
        rows.append({"table": name, **extreme_share(matrix), "rows_with_flagged_dim": int(flagged.sum()),
                     "rows_with_flagged_dim_percent": 100.0 * flagged.mean()})
    return pd.DataFrame(rows)


@dataclass
class LayerNormParameters:
    layer: int  # 0 = the embedding LayerNorm; l = the l-th transformer layer (hidden state l)
    which: str  # "embedding", "first" (after attention) or "second" (after the feed-forward block)
    module: str
    gamma: np.ndarray
    beta: np.ndarray


def layernorms(lm: LoadedModel) -> list[LayerNormParameters]:
    """Every LayerNorm over the hidden width, in model order, with its layer number and position in the layer."""
    found, per_layer = [], {}
    for name, module in lm.model.named_modules():
        if not isinstance(module, torch.nn.LayerNorm) or tuple(module.normalized_shape) != (lm.width,) or module.weight is None:
            continue
        match = re.search(r"\.(\d+)\.", f".{name}.")
        if "embeddings" in name.split("."):
            layer, which = 0, "embedding"
        elif match:
            layer = int(match.group(1)) + 1
            which = ("first", "second", "third")[min(per_layer.get(layer, 0), 2)]
            per_layer[layer] = per_layer.get(layer, 0) + 1
        else:
            continue  # e.g. a final LayerNorm outside the layer stack
        found.append(LayerNormParameters(layer, which, name, module.weight.detach().double().cpu().numpy(),
                                         module.bias.detach().double().cpu().numpy() if module.bias is not None else np.zeros(lm.width)))
    require(len(found) > 0, f"{lm.name} has no LayerNorm over its {lm.width}-wide hidden states")
    return found


def descending_ranks(vector: np.ndarray, dims: np.ndarray) -> np.ndarray:
    """Rank of vector[d] among all entries, 1 = largest value (ties share the better rank)."""
    dims = np.asarray(dims, dtype=int)
    return (vector[None, :] > vector[dims, None]).sum(axis=1) + 1


def parameter_ranks(norms: list[LayerNormParameters], dims: np.ndarray, signs: list[str]) -> pd.DataFrame:
    """For each LayerNorm, each outlier dim and γ and β: the value and its rank among the width.

    `rank` is the rank in the direction that preserves the outlier: γ scales the normalised value,
    so a large γ keeps an outlier of either sign (rank 1 = largest γ); β adds to it, so for a
    positive outlier rank 1 = largest β and for a negative outlier rank 1 = smallest β.
    `rank_abs` ranks |value| (1 = largest magnitude)."""
    require(len(dims) == len(signs) and set(signs) <= {"+", "-"}, "give one sign, '+' or '-', per dimension")
    rows = []
    for ln in norms:
        for param, vector in (("gamma", ln.gamma), ("beta", ln.beta)):
            high, low, size = descending_ranks(vector, dims), descending_ranks(-vector, dims), descending_ranks(np.abs(vector), dims)
            for d, sign, r_high, r_low, r_abs in zip(dims, signs, high, low, size):
                rank = r_high if param == "gamma" or sign == "+" else r_low
                rows.append({"layer": ln.layer, "layernorm": ln.which, "module": ln.module, "param": param, "dim": int(d),
                             "sign": sign, "value": float(vector[d]), "rank": int(rank), "rank_abs": int(r_abs), "width": len(vector)})
    return pd.DataFrame(rows)


def embedding_layernorm(lm: LoadedModel) -> torch.nn.LayerNorm:
    """The LayerNorm applied to the summed input embeddings."""
    for module in _embeddings_module(lm).modules():
        if isinstance(module, torch.nn.LayerNorm):
            return module
    raise BookError(f"{lm.name} has no LayerNorm inside its embeddings module, so there is no embedding input to capture")


class PositionProfile:
    """Collector: per sequence position, the average vector at the embedding LayerNorm's input
    (stage "input": token + position (+ segment) embeddings) and at the chosen hidden-state layers.

    Registers a hook on the model; use as a context manager (or call close()) to remove it."""

    def __init__(self, lm: LoadedModel, layers: tuple[int, ...] = (0, 1), max_positions: int = 128,
                 include_special: bool = True):
        require(max_positions > 0, "max_positions must be positive")
        require(all(0 <= layer <= lm.n_layers for layer in layers), f"layers must be within 0..{lm.n_layers} for {lm.name}")
        self.layers, self.max_positions, self.include_special = tuple(layers), max_positions, include_special
        self.stages = ["input"] + [f"layer {layer}" for layer in layers]
        self.sums = np.zeros((len(self.stages), max_positions, lm.width))
        self.counts = np.zeros(max_positions, dtype=np.int64)
        self._input: torch.Tensor | None = None
        self._handle = embedding_layernorm(lm).register_forward_pre_hook(self._capture)

    def _capture(self, module: torch.nn.Module, args: tuple[torch.Tensor, ...]) -> None:
        self._input = args[0].detach()

    def update(self, batch: TokenBatch) -> None:
        require(self._input is not None, "PositionProfile saw a batch but no embedding input: was the hook removed?")
        keep = batch.positions < self.max_positions
        if not self.include_special:
            keep &= ~batch.special
        pos, rows = batch.positions[keep], batch.rows[keep]
        idx = torch.from_numpy(np.flatnonzero(keep)).to(batch.hidden.device)
        stacks = [self._input[torch.from_numpy(rows).to(self._input.device), torch.from_numpy(pos).to(self._input.device)].float()]
        stacks += [batch.hidden[layer].index_select(0, idx) for layer in self.layers]
        for s, values in enumerate(stacks):
            np.add.at(self.sums[s], pos, values.double().cpu().numpy())
        self.counts += np.bincount(pos, minlength=self.max_positions)

    def means(self, min_count: int = 20) -> np.ndarray:
        """(stages, positions, width): average vector per stage for positions 0, 1, ... up to the last
        one with at least min_count tokens (later positions are too rare to average)."""
        enough = np.flatnonzero(self.counts >= min_count)
        require(len(enough) > 0, f"no position has {min_count} tokens: use more sentences")
        seen = int(enough.max()) + 1
        return self.sums[:, :seen] / np.maximum(self.counts[:seen], 1)[None, :, None]

    def close(self) -> None:
        self._handle.remove()

    def __enter__(self) -> PositionProfile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def propagation(profile_means: np.ndarray, stages: list[str], dims: np.ndarray, counts: np.ndarray,
                z_threshold: float = 10.0) -> pd.DataFrame:
    """For each stage and outlier dim: at how many positions the dim is flagged (|robust z| of the
    position's average vector >= z_threshold), and its median z over positions."""
    rows = []
    seen = counts[:profile_means.shape[1]] > 0
    for s, stage in enumerate(stages):
        z = robust_z(profile_means[s][seen])
        for d in dims:
            rows.append({"stage": stage, "dim": int(d), "positions": int(seen.sum()),
                         "positions_flagged": int((np.abs(z[:, d]) >= z_threshold).sum()),
                         "median_z": float(np.median(z[:, d])), "max_abs_z": float(np.abs(z[:, d]).max())})
    frame = pd.DataFrame(rows)
    frame["positions_flagged_percent"] = 100.0 * frame["positions_flagged"] / frame["positions"]
    return frame
