"""Chapter 04's experiment: a linear probe predicts each token's position from its vector in every layer (Luo et al.
2021, §3, Fig. 5), and each neuron's contribution |w_y · x| to the correct class shows which dimensions the probe
relies on, the model's outlier set among them."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..encode.collectors import AllTokens
from ..train import probe
from .schemas import PROBE_ACCURACY, PROBE_CONTRIBUTION


@dataclass
class ProbeRun:
    accuracy: pd.DataFrame  # PROBE_ACCURACY
    contribution: pd.DataFrame  # PROBE_CONTRIBUTION: per layer, the outlier dims' mean contribution and rank
    all_neurons: pd.DataFrame  # layer, dim, mean_contribution
    heatmaps: dict[str, np.ndarray]  # label -> (positions, layers) mean contribution by position
    dropped: int  # tokens at positions beyond the probe's classes
    last_layer: tuple[dict[str, np.ndarray], dict[str, np.ndarray]]  # the last layer's (x, y) per split


def by_position_table(heatmaps: dict[str, np.ndarray]) -> pd.DataFrame:
    """The heatmaps as one long table: position, layer, mean_contribution, neuron."""
    frames = [
        pd.DataFrame(m).rename_axis("position").reset_index().melt(id_vars="position", var_name="layer", value_name="mean_contribution").assign(neuron=label)
        for label, m in heatmaps.items()
    ]
    return pd.concat(frames, ignore_index=True)


def run(tokens: dict[str, AllTokens], dims: np.ndarray, n_layers: int, max_positions: int, heatmap_positions: int, name: str, **train: object) -> ProbeRun:
    """Train one probe per layer (0 … n_layers) on the "train" tokens, choose the epoch on "dev", score and attribute on
    "test"; `train` goes to `probe.train_probe` (epochs, batch_size, lr, seed, device)."""
    keep = {split: t.positions < max_positions for split, t in tokens.items()}
    y = {split: t.positions[keep[split]] for split, t in tokens.items()}
    acc_rows, contrib_rows, mean_by_dim, maps = [], [], [], []
    for layer in range(n_layers + 1):
        x = {split: t.layer(layer)[keep[split]] for split, t in tokens.items()}
        trained = probe.train_probe(x["train"], y["train"], x["dev"], y["dev"], max_positions, desc=f"{name} layer {layer}", **train)
        row, mean_c, heat = probe.contribution_summary(probe.contributions(trained.weight, x["test"], y["test"]), y["test"], dims, heatmap_positions)
        acc_rows.append(
            {
                "layer": layer,
                "dev_accuracy": trained.dev_accuracy[trained.best_epoch - 1],
                "best_epoch": trained.best_epoch,
                "test_accuracy": probe.accuracy(trained.weight, x["test"], y["test"]),
                "train_tokens": len(y["train"]),
                "test_tokens": len(y["test"]),
            }
        )
        contrib_rows.append({"layer": layer, **row})
        mean_by_dim.append(mean_c)
        maps.append(heat)
    stacked = np.stack(maps, axis=1)  # (positions, layers, outlier dims + 1)
    heatmaps = {**{f"dim {d} (outlier)": stacked[:, :, i] for i, d in enumerate(dims)}, "largest non-outlier neuron": stacked[:, :, -1]}
    all_neurons = pd.DataFrame(np.array(mean_by_dim)).rename_axis("layer").reset_index().melt(id_vars="layer", var_name="dim", value_name="mean_contribution")
    return ProbeRun(
        PROBE_ACCURACY.frame(acc_rows),
        PROBE_CONTRIBUTION.frame(contrib_rows),
        all_neurons,
        heatmaps,
        sum(int((~k).sum()) for k in keep.values()),
        (x, y),
    )
