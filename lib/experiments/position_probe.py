"""Chapter 04's experiment: a linear probe predicts each token's position from its vector in every layer (Luo et al.
2021, §3, Fig. 5), and each neuron's contribution |w_y · x| to the correct class shows which dimensions the probe
relies on, the model's outlier set among them.

The paper's probe has no bias, so a dimension that is large and nearly constant can stand in for the bias and earn a
large contribution while carrying no position information. Two controls are trained beside it on every layer: the same
probe on *centred* vectors (the training mean subtracted, so no constant can stand in for the bias), and the paper's
probe trained on *shuffled* positions (no position information at all; its accuracy is chance, and a dimension that
still contributes most does so by its size)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from ..encode.collectors import AllTokens
from ..train import probe
from .schemas import PROBE_ACCURACY, PROBE_CONTRIBUTION

PROBES = {
    "paper": "bias-free, on the vectors (Luo et al. 2021)",
    "centred": "bias-free, on the vectors minus the training mean (control: no constant stands in for a bias)",
    "shuffled": "as the paper's, trained on shuffled positions (control: no position information)",
}


def probe_inputs(x: dict[str, np.ndarray], y: dict[str, np.ndarray], seed: int) -> dict[str, tuple[dict, np.ndarray]]:
    """Per probe of PROBES, its inputs per split and its training labels."""
    mean = x["train"].mean(axis=0, keepdims=True)
    shuffled = np.random.default_rng(seed).permutation(y["train"])
    return {"paper": (x, y["train"]), "centred": ({k: v - mean for k, v in x.items()}, y["train"]), "shuffled": (x, shuffled)}


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
    """Train the paper's probe and its two controls (PROBES) per layer (0 … n_layers) on the "train" tokens, choose the
    epoch on "dev", score and attribute on "test"; `train` goes to `probe.train_probe` (epochs, batch_size, lr, seed, device)."""
    keep = {split: t.positions < max_positions for split, t in tokens.items()}
    y = {split: t.positions[keep[split]] for split, t in tokens.items()}
    acc_rows, contrib_rows, mean_by_dim, maps = [], [], [], []
    for layer in range(n_layers + 1):
        layer_x = {split: t.layer(layer)[keep[split]] for split, t in tokens.items()}
        accuracy = {}
        for kind, (x, y_train) in probe_inputs(layer_x, y, int(train.get("seed", 0))).items():
            trained = probe.train_probe(x["train"], y_train, x["dev"], y["dev"], max_positions, desc=f"{name} layer {layer} ({kind})", **train)
            contrib = probe.contributions(trained.weight, x["test"], y["test"])
            row, mean_c, heat = probe.contribution_summary(contrib, y["test"], dims, heatmap_positions)
            contrib_rows.append({"layer": layer, "probe": kind, **row})
            accuracy[kind] = (trained, probe.accuracy(trained.weight, x["test"], y["test"]))
            if kind == "paper":
                mean_by_dim.append(mean_c)
                maps.append(heat)
        trained, test_accuracy = accuracy["paper"]
        acc_rows.append(
            {
                "layer": layer,
                "dev_accuracy": trained.dev_accuracy[trained.best_epoch - 1],
                "best_epoch": trained.best_epoch,
                "test_accuracy": test_accuracy,
                "train_tokens": len(y["train"]),
                "test_tokens": len(y["test"]),
                "centred_test_accuracy": accuracy["centred"][1],
                "shuffled_test_accuracy": accuracy["shuffled"][1],
            }
        )
    stacked = np.stack(maps, axis=1)  # (positions, layers, outlier dims + 1)
    heatmaps = {**{f"dim {d} (outlier)": stacked[:, :, i] for i, d in enumerate(dims)}, "largest non-outlier neuron": stacked[:, :, -1]}
    all_neurons = pd.DataFrame(np.array(mean_by_dim)).rename_axis("layer").reset_index().melt(id_vars="layer", var_name="dim", value_name="mean_contribution")
    return ProbeRun(
        PROBE_ACCURACY.frame(acc_rows),
        PROBE_CONTRIBUTION.frame(contrib_rows),
        all_neurons,
        heatmaps,
        sum(int((~k).sum()) for k in keep.values()),
        (layer_x, y),
    )
