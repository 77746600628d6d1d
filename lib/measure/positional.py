"""Where outliers come from (Luo et al. 2021, §3): the embedding tables (position, token, segment),
the LayerNorm gains and biases, and per-position averages from the embedding LayerNorm's input up
through the first layers. Everything is read from the loaded model; nothing is model-specific."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from ..encode.collectors import extreme_counts
from ..encode.models import LoadedModel, embeddings_module
from ..errors import require
from .outliers import descending_ranks, robust_z

AFTER_FIRST = "position after the first"  # the position table without its first used row (the [CLS]/<s> position)


@dataclass
class EmbeddingTables:
    """The input embedding tables as float64 arrays. position_offset is the table row that sequence
    position 0 reads (0 for BERT; padding id + 1 for RoBERTa/MPNet, which skip rows for padding)."""

    token: np.ndarray
    position: np.ndarray | None
    segment: np.ndarray | None
    position_offset: int


def position_offset(lm: LoadedModel) -> int:
    """The position-table row used for sequence position 0, observed by running the embeddings on a short input."""
    table = getattr(embeddings_module(lm), "position_embeddings", None)
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
    emb = embeddings_module(lm)

    def weights(name: str) -> np.ndarray | None:
        table = getattr(emb, name, None)
        return table.weight.detach().double().cpu().numpy() if isinstance(table, torch.nn.Embedding) else None

    position = weights("position_embeddings")
    return EmbeddingTables(weights("word_embeddings"), position, weights("token_type_embeddings"), position_offset(lm) if position is not None else 0)


def row_outliers(matrix: np.ndarray, z_threshold: float = 10.0) -> pd.DataFrame:
    """Per row (e.g. per position embedding): the dimensions at least z_threshold robust standard
    deviations from that row's median, the largest |z|, and the row's argmin and argmax."""
    z = robust_z(matrix)
    flags = np.abs(z) >= z_threshold
    return pd.DataFrame(
        {
            "row": np.arange(len(matrix)),
            "n_flagged": flags.sum(axis=1),
            "flagged_dims": [" ".join(map(str, np.flatnonzero(f))) for f in flags],
            "max_abs_z": np.abs(z).max(axis=1),
            "argmin_dim": matrix.argmin(axis=1),
            "argmax_dim": matrix.argmax(axis=1),
        }
    )


def extreme_share(matrix: np.ndarray) -> dict[str, float | int]:
    """The dimension that is most often a row's maximum (minimum), and the % of rows for which it is."""
    require(len(matrix) > 0, "no rows to count")
    lo, hi = extreme_counts(matrix[None])
    out: dict[str, float | int] = {"n_rows": len(matrix)}
    for kind, counts in (("argmax", hi[0]), ("argmin", lo[0])):
        out[f"{kind}_dim"], out[f"{kind}_percent"] = int(counts.argmax()), 100.0 * counts.max() / len(matrix)
    return out


@dataclass
class PositionView:
    """Chapter 03's view of a model's embedding tables: the tables, one summary row per table, and the position
    rows that sequences use (`position` = sequence position, `table_row` = the row it reads)."""

    tables: EmbeddingTables
    summary: pd.DataFrame
    rows: pd.DataFrame

    def example_rows(self) -> list[int]:
        """Positions worth plotting: the first three, the one with the largest |z|, and position 50 (or the last)."""
        return list(dict.fromkeys([0, 1, 2, int(self.rows["max_abs_z"].idxmax()), min(50, len(self.rows) - 1)]))

    def matrix(self, positions: list[int]) -> np.ndarray:
        """The position embeddings of the given sequence positions."""
        return self.tables.position[self.tables.position_offset + np.asarray(positions)]


def position_view(lm: LoadedModel, z_threshold: float) -> PositionView:
    """Embedding tables of a model, their summary, and flagged dimensions of every position row up to the model's maximum length."""
    tables = embedding_tables(lm)
    require(tables.position is not None, f"{lm.name} has no learned position-embedding table")
    rows = row_outliers(tables.position[tables.position_offset : tables.position_offset + lm.max_length], z_threshold)
    rows.insert(0, "position", rows.pop("row"))
    rows.insert(1, "table_row", rows["position"] + tables.position_offset)
    return PositionView(tables, table_summary(tables, z_threshold, n_positions=lm.max_length), rows)


def table_summary(tables: EmbeddingTables, z_threshold: float = 10.0, n_positions: int | None = None) -> pd.DataFrame:
    """One row per embedding table: rows with a flagged dimension, and the most frequent argmax/argmin.
    Position rows are those sequences use (from the offset on, at most n_positions); the position
    table is also counted without its first used row (the [CLS]/<s> position)."""
    parts = [("token", tables.token)]
    if tables.position is not None:
        stop = None if n_positions is None else tables.position_offset + n_positions
        used = tables.position[tables.position_offset : stop]
        parts += [("position", used), (AFTER_FIRST, used[1:])]
    if tables.segment is not None:
        parts.append(("segment", tables.segment))
    rows = []
    for name, matrix in parts:
        flagged = row_outliers(matrix, z_threshold)["n_flagged"] > 0
        rows.append(
            {"table": name, **extreme_share(matrix), "rows_with_flagged_dim": int(flagged.sum()), "rows_with_flagged_dim_percent": 100.0 * flagged.mean()}
        )
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
        found.append(
            LayerNormParameters(
                layer,
                which,
                name,
                module.weight.detach().double().cpu().numpy(),
                module.bias.detach().double().cpu().numpy() if module.bias is not None else np.zeros(lm.width),
            )
        )
    require(len(found) > 0, f"{lm.name} has no LayerNorm over its {lm.width}-wide hidden states")
    return found


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
                rows.append(
                    {
                        "layer": ln.layer,
                        "layernorm": ln.which,
                        "module": ln.module,
                        "param": param,
                        "dim": int(d),
                        "sign": sign,
                        "value": float(vector[d]),
                        "rank": int(rank),
                        "rank_abs": int(r_abs),
                        "width": len(vector),
                    }
                )
    return pd.DataFrame(rows)


def propagation(profile_means: np.ndarray, stages: list[str], dims: np.ndarray, counts: np.ndarray, z_threshold: float = 10.0) -> pd.DataFrame:
    """For each stage and outlier dim: at how many positions the dim is flagged (|robust z| of the
    position's average vector >= z_threshold), and its median z over positions."""
    rows = []
    seen = counts[: profile_means.shape[1]] > 0
    for s, stage in enumerate(stages):
        z = robust_z(profile_means[s][seen])
        for d in dims:
            rows.append(
                {
                    "stage": stage,
                    "dim": int(d),
                    "positions": int(seen.sum()),
                    "positions_flagged": int((np.abs(z[:, d]) >= z_threshold).sum()),
                    "median_z": float(np.median(z[:, d])),
                    "max_abs_z": float(np.abs(z[:, d]).max()),
                }
            )
    frame = pd.DataFrame(rows, columns=["stage", "dim", "positions", "positions_flagged", "median_z", "max_abs_z"])
    frame["positions_flagged_percent"] = 100.0 * frame["positions_flagged"] / frame["positions"]
    return frame
