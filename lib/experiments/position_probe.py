"""Chapter 04's experiment: a linear probe predicts each token's position from its vector in every layer (Luo et al.
2021, §3, Fig. 5), and each neuron's contribution |w_y · x| to the correct class shows which dimensions the probe
relies on, the model's outlier set among them.

The paper's probe has no bias, so a dimension that is large and nearly constant can stand in for the bias and earn a
large contribution while carrying no position information. Two controls are trained beside it on every layer: the same
probe on *centred* vectors (the training mean subtracted, so no constant can stand in for the bias), and the paper's
probe trained on *shuffled* positions (no position information at all; its accuracy is chance, and a dimension that
still contributes most does so by its size)."""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import matplotlib
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from ..core import paper
from ..core.checks import positive_int, positive_number
from ..core.declaration import chapter
from ..core.store import Writer
from ..datasets.tasks import sample_sentences, sst2_sentences
from ..encode.collectors import AllTokens
from ..encode.extraction import extract
from ..encode.models import load_model
from ..errors import require
from ..measure import inference
from ..train import probe
from . import outlier_set, plotting
from .cells import annotated
from .plotting import COLORS
from .verdicts import FAILS, HOLDS, INCONCLUSIVE, UNTESTABLE, Claim, Outcome, Tables, contextual, decide, from_units, outcome, unit

CHAPTER = chapter("04_position_probe", reads=(outlier_set.CHAPTER,))

PROBES = {
    "paper": "bias-free, on the vectors (Luo et al. 2021)",
    "centred": "bias-free, on the vectors minus the training mean (control: no constant stands in for a bias)",
    "shuffled": "as the paper's, trained on shuffled positions (control: no position information)",
}


def probe_inputs(x: dict[str, np.ndarray], y: dict[str, np.ndarray], seed: int) -> dict[str, tuple[dict, np.ndarray, np.ndarray | None]]:
    """Per probe of PROBES, its inputs per split, its training labels, and what is subtracted from the vectors (the
    training mean for the centred probe, else None)."""
    mean = x["train"].mean(axis=0)
    shuffled = np.random.default_rng(seed).permutation(y["train"])
    centred = {k: v - mean for k, v in x.items()}
    return {"paper": (x, y["train"], None), "centred": (centred, y["train"], mean), "shuffled": (x, shuffled, None)}


def inputs(
    n_train: int, n_dev: int, n_test: int, seed: int, *, max_positions: int, epochs: int, batch_size: int, lr: float, heatmap_positions: int, probe_seeds: int
) -> dict[str, list[str]]:
    """The probe's sentences by split (SST-2 training phrases, development and test sentences), every parameter checked first."""
    for name, value in dict(
        n_dev=n_dev,
        n_test=n_test,
        max_positions=max_positions,
        epochs=epochs,
        batch_size=batch_size,
        heatmap_positions=heatmap_positions,
        probe_seeds=probe_seeds,
    ).items():
        positive_int(name, value)
    positive_number("lr", lr)
    require(heatmap_positions <= max_positions, f"heatmap_positions ({heatmap_positions}) cannot exceed max_positions ({max_positions})")
    return {
        "train": sst2_sentences(n_train, seed),
        "dev": sample_sentences("sst2", "dev", n_dev, seed=seed),
        "test": sample_sentences("sst2", "test", n_test, seed=seed),
    }


@dataclass(frozen=True)
class ProbeRun:
    accuracy: pd.DataFrame  # PROBE_ACCURACY
    by_sentence: pd.DataFrame  # PROBE_SENTENCES: the paper's probe, per layer, training seed and test sentence
    contribution: pd.DataFrame  # PROBE_CONTRIBUTION: per layer, the outlier dims' mean contribution and rank
    all_neurons: pd.DataFrame  # layer, dim, mean_contribution
    heatmaps: dict[str, np.ndarray]  # label -> (positions, layers) mean contribution by position
    dropped: int  # tokens at positions beyond the probe's classes
    last_layer: tuple[dict[str, np.ndarray], dict[str, np.ndarray]]  # the last layer's (x, y) per split
    name: str = ""  # the model's
    dims: np.ndarray | None = None  # its outlier dimensions (chapter 02's set)


def by_position_table(heatmaps: dict[str, np.ndarray]) -> pd.DataFrame:
    """The heatmaps as one long table: position, layer, mean_contribution, neuron."""
    frames = [
        pd.DataFrame(m).rename_axis("position").reset_index().melt(id_vars="position", var_name="layer", value_name="mean_contribution").assign(neuron=label)
        for label, m in heatmaps.items()
    ]
    return pd.concat(frames, ignore_index=True)


def _probe(
    tokens: dict[str, AllTokens], dims: np.ndarray, n_layers: int, max_positions: int, heatmap_positions: int, name: str, probe_seeds: int = 1, **train: object
) -> ProbeRun:
    """Train the paper's probe and its two controls (PROBES) per layer (0 … n_layers) on the "train" tokens, choose the
    epoch on "dev", score and attribute on "test", all of a layer's probes side by side; `train` goes to `probe.train_probes`
    (epochs, batch_size, lr, device; seed the first batch order).
    The paper's probe, whose accuracy the scorecard reads, and the centred probe, whose ranks it reads, are trained
    `probe_seeds` times (batch orders seed, seed + 1, …), so that both the test sample and the probe's training are in
    the uncertainty: `by_sentence` holds the paper's probe's tokens right per layer, training and test sentence (the
    sampled unit), and `outlier_first_share` the share of (seed, sentence resample) pairs in which an outlier dimension
    ranks first. The accuracy, contribution and heatmap columns are the first training's."""
    require(isinstance(probe_seeds, int) and probe_seeds >= 1, f"probe_seeds must be a positive integer, got {probe_seeds!r}")
    keep = {split: t.positions < max_positions for split, t in tokens.items()}
    y = {split: t.positions[keep[split]] for split, t in tokens.items()}
    sentences = tokens["test"].sentence_ids[keep["test"]]
    ids, inverse = np.unique(sentences, return_inverse=True)
    per_sentence = np.bincount(inverse, minlength=len(ids))
    seed = int(train.get("seed", 0))
    acc_rows, contrib_rows, mean_by_dim, maps, hit_rows = [], [], [], [], []
    for layer in range(n_layers + 1):
        layer_x = {split: t.layer(layer)[keep[split]] for split, t in tokens.items()}
        accuracy = {}
        inputs = probe_inputs(layer_x, y, seed)
        jobs = [(kind, extra) for kind in PROBES for extra in range(probe_seeds if kind in ("paper", "centred") else 1)]  # other batch orders
        probes = probe.train_probes(
            layer_x["train"],
            [inputs[kind][1] for kind, _ in jobs],
            layer_x["dev"],
            y["dev"],
            max_positions,
            seeds=[seed + extra for _, extra in jobs],
            offsets=[inputs[kind][2] for kind, _ in jobs],
            desc=f"{name} layer {layer} ({len(jobs)} probes)",
            **{key: value for key, value in train.items() if key != "seed"},
        )
        for kind in PROBES:
            x, first = inputs[kind][0], []
            for (job_kind, extra), trained in zip(jobs, probes):
                if job_kind != kind:
                    continue
                contrib = probe.contributions(trained.weight, x["test"], y["test"])
                first.append(probe.first_share(contrib, sentences, dims, seed=seed + extra))
                if kind == "paper":  # the sampled unit of its accuracy: each test sentence's tokens right, per training
                    hits = np.bincount(inverse, weights=probe.correct(trained.weight, x["test"], y["test"]), minlength=len(ids))
                    hit_rows.append(pd.DataFrame({"layer": layer, "seed": extra, "sentence": ids, "hits": hits.astype(int), "tokens": per_sentence}))
                if extra == 0:
                    row, mean_c, heat = probe.contribution_summary(contrib, y["test"], dims, heatmap_positions)
                    accuracy[kind] = (trained, probe.accuracy(trained.weight, x["test"], y["test"]))
            contrib_rows.append({"layer": layer, "probe": kind, **row, "outlier_first_share": float(np.mean(first)), "probe_seeds": len(first)})
            if kind == "paper":
                mean_by_dim.append(mean_c)
                maps.append(heat)
        trained, test_accuracy = accuracy["paper"]
        acc_rows.append(
            {
                "layer": layer,
                "dev_accuracy": trained.dev_accuracy[trained.best_epoch - 1],
                "best_epoch": trained.best_epoch,
                "converged": trained.converged,
                "centred_converged": accuracy["centred"][0].converged,
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
        PROBE_SENTENCES.check(pd.concat(hit_rows, ignore_index=True)),
        PROBE_CONTRIBUTION.frame(contrib_rows),
        all_neurons,
        heatmaps,
        sum(int((~k).sum()) for k in keep.values()),
        (layer_x, y),
    )


def run(
    spec: str,
    splits: dict[str, list[str]],
    *,
    profile: str,
    max_positions: int,
    heatmap_positions: int,
    epochs: int,
    batch_size: int,
    lr: float,
    seed: int,
    probe_seeds: int,
    results: Writer,
    parameters: dict,
    device: str = "auto",
    dtype: str = "auto",
) -> ProbeRun:
    """One model: every token of every split in every layer, the paper's probe and its two controls trained on each
    layer, and the neurons' contributions (five tables written)."""
    lm = load_model(spec, device=device, dtype=dtype)
    reference = outlier_set.outliers_of(lm, spec, profile)
    print(f"outlier set of {reference.describe()}")
    tokens = {split: AllTokens() for split in splits}
    for split, sentences in splits.items():
        extract(lm, sentences, [tokens[split]], desc=f"{lm.name} {split}")
    train = dict(epochs=epochs, batch_size=batch_size, lr=lr, seed=seed, device=device, probe_seeds=probe_seeds)
    found = _probe(tokens, reference.dims, lm.n_layers, max_positions=max_positions, heatmap_positions=heatmap_positions, name=lm.name, **train)
    if found.dropped:
        print(f"{lm.name}: {found.dropped} tokens at positions >= {max_positions} are left out (the probe has {max_positions} classes)")
    info = {"name": lm.name, "n_layers": lm.n_layers, "width": lm.width, "outlier_dims": reference.dims.tolist(), "dropped_tokens": found.dropped}
    for schema, frame in [
        (PROBE_ACCURACY, found.accuracy),
        (PROBE_SENTENCES, found.by_sentence),  # the sampled unit the scorecard resamples
        (PROBE_CONTRIBUTION, found.contribution),
        (CONTRIBUTION_ALL, found.all_neurons),
        (CONTRIBUTION_BY_POSITION, by_position_table(found.heatmaps)),
    ]:
        results.table(frame, schema, spec, parameters=parameters, model_info=info)
    return replace(found, name=lm.name, dims=reference.dims)


def _paper_probe(run: ProbeRun) -> pd.DataFrame:
    return run.contribution[run.contribution["probe"] == "paper"].drop(columns="probe")


def figure_accuracy(runs: dict[str, ProbeRun], results: Writer) -> None:
    fig = probe_accuracy({name: r.accuracy for name, r in runs.items()})
    alt = "Test accuracy of the position probe by layer: " + "; ".join(
        f"{name} {100 * r.accuracy['test_accuracy'].iloc[0]:.1f}% at the embedding output, {100 * r.accuracy['test_accuracy'].max():.1f}% at best "
        f"(layer {int(r.accuracy.loc[r.accuracy['test_accuracy'].idxmax(), 'layer'])}) and {100 * r.accuracy['test_accuracy'].iloc[-1]:.1f}% in the last layer"
        for name, r in runs.items()
    )
    results.figure(fig, "probe_accuracy", "Accuracy of the linear probe that predicts a token's position from its vector, by layer.", alt=alt + ".")


ACCURACY_WORDS = {
    "dev_accuracy": "development accuracy",
    "best_epoch": "epoch kept",
    "converged": "levelled off",
    "centred_converged": "centred probe levelled off",
    "train_tokens": "training tokens",
    "centred_test_accuracy": "centred probe: test accuracy",
    "shuffled_test_accuracy": "shuffled positions: test accuracy",
}


def accuracy_tables(runs: dict[str, ProbeRun]) -> dict[str, pd.DataFrame]:
    """Per model: the PROBE_ACCURACY table as the page shows it, its columns in words."""
    return {name: r.accuracy.rename(columns=ACCURACY_WORDS) for name, r in runs.items()}


def figure_contributions(runs: dict[str, ProbeRun], results: Writer) -> None:
    """The outlier dimensions' mean contribution against the other neurons', by layer (models with outlier dimensions)."""
    with_dims = {name: _paper_probe(r) for name, r in runs.items() if len(r.dims)}
    if with_dims:
        caption = "Mean contribution of the outlier dimensions and of the other dimensions to the probe's prediction, by layer."
        alt = "Mean contribution to the probe's prediction by layer: " + "; ".join(
            f"in {name} an outlier dimension contributes most in {int((t.filter(like=' rank').min(axis=1) == 1).sum())} of {len(t)} layers, "
            f"the largest other neuron peaks at {t['top_other'].max():.3f} and the average neuron at {t['mean_all'].max():.3f}"
            for name, t in with_dims.items()
        )
        results.figure(contributions_by_layer(with_dims), "contribution_by_layer", caption, alt=alt + ".")


def contribution_tables(runs: dict[str, ProbeRun]) -> dict[str, pd.DataFrame]:
    """Per model: the mean contribution by layer of all neurons, of the largest other neuron and of each outlier
    dimension (its rank among all neurons)."""
    out = {}
    for name, r in runs.items():
        frame = _paper_probe(r)
        shown = frame[["layer", "mean_all", "top_dim"]].assign(
            **{"largest other neuron (its dimension)": annotated(frame["top_other"], frame["top_other_dim"])}
        )
        for d in r.dims:
            shown[f"dim {d} (rank)"] = annotated(frame[f"dim {d}"], frame[f"dim {d} rank"])
        out[name] = shown
    return out


def control_tables(runs: dict[str, ProbeRun]) -> dict[str, pd.DataFrame]:
    """Per model: the three probes' test accuracy, and each outlier dimension's rank under each (1 = largest)."""
    probes, out = ["centred", "paper", "shuffled"], {}
    for name, r in runs.items():
        columns = [f"dim {d} rank" for d in r.dims] or ["top_dim"]
        wide = r.contribution.pivot(index="layer", columns="probe", values=columns)
        ranks = pd.DataFrame(
            {
                f"{c.removesuffix(' rank') + ', rank' if r.dims.size else 'top neuron, dimension'}: {' · '.join(probes)}": [
                    " · ".join("–" if pd.isna(v) else str(int(v)) for v in row) for row in wide[c][probes].itertuples(index=False)
                ]
                for c in columns
            },
            index=wide.index,
        )
        acc = r.accuracy.set_index("layer")[["test_accuracy", "centred_test_accuracy", "shuffled_test_accuracy"]]
        out[name] = acc.rename(columns=ACCURACY_WORDS).join(ranks).reset_index()
    return out


def figures_heatmaps(runs: dict[str, ProbeRun], results: Writer) -> None:
    for name, r in runs.items():
        caption = f"{name}: contribution of each dimension to the prediction of each position (each panel on its own colour scale)."
        peaks = "; ".join(
            f"{label} peaks at {np.nanmax(m):.3f} (position {at[0]}, layer {at[1]})"
            for label, m in r.heatmaps.items()
            for at in [np.unravel_index(np.nanargmax(m), m.shape)]
        )
        results.figure(
            contribution_heatmaps(r.heatmaps),
            f"contribution_heatmaps_{name}",
            caption,
            tab=name,
            alt=f"{name}, mean contribution by position and layer: {peaks}.",
        )


def findings(runs: dict[str, ProbeRun]) -> list[str]:
    """What our run shows: per model, the probe's accuracy low and high in the network, and each outlier dimension's
    contribution and rank under the paper's and the centred probe."""
    lines = []
    for name, r in runs.items():
        acc, con, dims = r.accuracy, _paper_probe(r), r.dims
        centred = r.contribution[r.contribution["probe"] == "centred"]
        low = acc[acc["layer"].between(1, lowest_layers(int(acc["layer"].max())))]
        span = f"layer{'s' if len(low) > 1 else ''} {'-'.join(str(int(v)) for v in low['layer'].iloc[[0, -1]].unique())}"
        lowest, highest = (f"{100 * v:.1f}" for v in (low["test_accuracy"].min(), low["test_accuracy"].max()))
        text = (
            f"- **{name}**: test accuracy {100 * acc['test_accuracy'].iloc[0]:.1f}% at the embedding output, "
            f"{lowest if lowest == highest else f'{lowest}–{highest}'}% in {span} (the lowest quarter of the depth), "
            f"{100 * acc['test_accuracy'].iloc[-1]:.1f}% in the last layer; the probe had levelled off in {int(acc['converged'].sum())} of {len(acc)} layers."
        )
        for d in dims:
            top = (con[f"dim {d} rank"] == 1).sum()
            above = (con[f"dim {d}"] > con["mean_all"]).sum()
            text += (
                f" Dim {d} contributes more than the average neuron in {above} of {len(con)} layers and is the top neuron in {top} "
                f"(best rank {con[f'dim {d} rank'].min()}); with the centred probe it is the top neuron in "
                f"{(centred[f'dim {d} rank'] == 1).sum()} (best rank {centred[f'dim {d} rank'].min()})."
            )
        if not len(dims):
            text += " No model-level outlier dimension was detected."
        lines.append(text)
    return lines


def answer(runs: dict[str, ProbeRun]) -> list[str]:
    """The chapter's answer: the paper's probe's test accuracy in layer 1 against the shuffled-position control, its fall
    from layer 1 to the last layer (points, paired over the same sentences), in how many contextual layers an outlier
    dimension contributes most to the centred probe (and to the paper's), and where the probe was still improving; 95%
    intervals from a bootstrap over test sentences, each sentence's hits averaged over the probe's trainings."""
    reads, controls, falls, firsts, still, fading = [], [], [], [], [], True
    for name, r in runs.items():
        by_layer, acc = sentence_means(r.by_sentence), r.accuracy.set_index("layer")
        first, last = (by_layer[layer].set_index("sentence") for layer in (1, max(by_layer)))
        seeds = int(min(first["seeds"].min(), last["seeds"].min()))
        reads.append(f"{sentence_share(first['hits'], first['tokens'], seeds).scaled(100).text(1, '%', method=False)} of the time in {name}")
        controls.append(f"{100 * acc.loc[1, 'shuffled_test_accuracy']:.1f}%")
        fall = sentence_share(first["hits"] - last["hits"].reindex(first.index), first["tokens"], seeds).scaled(100)
        falls.append(fall.text(1, "", method=False))
        fading &= fall.low > 0
        ranks = [f"dim {d} rank" for d in r.dims]
        if ranks:
            first_in = {kind: int((part[ranks].min(axis=1) == 1).sum()) for kind, part in r.contribution[r.contribution["layer"] >= 1].groupby("probe")}
            firsts.append((f"{first_in['centred']} of {len(acc) - 1}", str(first_in["paper"])))
        still.append(f"{int((~acc['converged'].astype(bool)).sum())} of {len(acc)}")
    test = next(iter(runs.values())).by_sentence
    sample = f"95% intervals over {test['sentence'].nunique():,} test sentences and {test['seed'].nunique()} probe trainings"
    respectively = " respectively" if len(runs) > 1 else ""
    depth = "by the last layer it loses" if fading else "layer 1 minus the last layer is"
    lines = [
        f"In layer 1 a linear probe reads a test token's exact position {' and '.join(reads)}, against {' and '.join(controls)} "
        f"when trained on shuffled positions ({sample}); {depth} {' and '.join(falls)} points{respectively}."
    ]
    improving = f"the probe was still improving at its last epoch in {' and '.join(still)} layers" if any(not s.startswith("0 ") for s in still) else ""
    if firsts:
        lines.append(
            f"On centred vectors an outlier dimension contributes most in {' and '.join(c for c, _ in firsts)} contextual layers "
            f"({' and '.join(p for _, p in firsts)} without centring){respectively}" + (f"; {improving}." if improving else ".")
        )
    elif improving:
        lines.append(improving[:1].upper() + improving[1:] + ".")
    return lines


def layers_above(runs: dict[str, ProbeRun], level: float = 0.9) -> str:
    """Exercise ex-04-read: the layers whose test accuracy reaches `level`, and where it first falls below."""
    lines = []
    for name, r in runs.items():
        frame = r.accuracy
        high = frame[frame["test_accuracy"] >= level]["layer"].tolist()
        first_below = frame[frame["test_accuracy"] < level]["layer"].min()
        lines.append(
            f"- **{name}**: test accuracy ≥ {level:.0%} "
            + (f"in layer{'s' * (len(high) > 1)} {', '.join(map(str, high))}" if high else "in no layer")
            + (
                f"; it first falls below in layer {int(first_below)} ({frame.set_index('layer').loc[first_below, 'test_accuracy']:.1%})."
                if pd.notna(first_below)
                else "."
            )
        )
    return "\n".join(lines)


def convergence_lines(runs: dict[str, ProbeRun], epochs: int) -> str:
    """Exercise ex-04-lr: in how many layers the best epoch is the last, and the probe still improving."""
    return (
        "\n".join(
            f"- **{name}**: the best development epoch is the last one ({epochs}) in {int((r.accuracy['best_epoch'] == epochs).sum())} "
            f"of {len(r.accuracy)} layers; "
            f"it was still improving (half a point or more in the last epoch) in {int((~r.accuracy['converged']).sum())}."
            for name, r in runs.items()
        )
        + "\n\nA layer whose best epoch is the last was still improving when training stopped. With Adam each step moves a weight by "
        "about the learning rate, so a ten times smaller rate covers about a tenth of the distance in the same epochs: expect lower "
        "accuracy in those layers (the note at the top of this chapter reports such a measurement for MPNet), and contribution "
        "rankings that may move because the probe has not converged."
    )


def bucket_accuracy(run: ProbeRun, bucket: int, *, max_positions: int, epochs: int, batch_size: int, lr: float, seed: int, device: str) -> str:
    """Exercise ex-04-target: the last layer probed for the position bucket (position // bucket) against the exact position."""
    x, y = run.last_layer
    coarse = probe.train_probe(
        x["train"],
        y["train"] // bucket,
        x["dev"],
        y_dev=y["dev"] // bucket,
        n_classes=-(-max_positions // bucket),
        epochs=epochs,
        batch_size=batch_size,
        lr=lr,
        seed=seed,
        device=device,
        desc="position bucket",
    )
    exact = run.accuracy.iloc[-1]["test_accuracy"]
    return (
        f"**{run.name}**, last layer: exact position {exact:.1%}, bucket of {bucket} positions "
        f"{probe.accuracy(coarse.weight, x['test'], y['test'] // bucket):.1%} (test tokens). "
        "A bucket accuracy far above the exact one means the layer still knows roughly where a token is but no longer exactly."
    )


def paper_claims() -> pd.DataFrame:
    return paper.table("luo2021", "probe_claims")


def probe_accuracy(tables: dict[str, pd.DataFrame]):
    """Position-prediction accuracy by layer, one line per model (test set; dev as a thin dashed line)."""
    fig, ax = plt.subplots(figsize=(7.5, 4.2), layout="constrained")
    for (name, t), color in zip(tables.items(), COLORS):
        ax.plot(t["layer"], 100 * t["test_accuracy"], "-o", color=color, label=f"{name} (test)")
        ax.plot(t["layer"], 100 * t["dev_accuracy"], "--", lw=0.8, color=color, label=f"{name} (development)")
    ax.set(xlabel="layer (0 = embedding output)", ylabel="accuracy (%)", ylim=(0, 102))
    ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
    plotting.legend_above(fig, ax)
    return fig


def contributions_by_layer(tables: dict[str, pd.DataFrame]):
    """Per model: mean contribution by layer of each outlier dimension, of the largest non-outlier neuron, and of all neurons."""
    fig, axes = plt.subplots(len(tables), 1, figsize=(7.5, 3.8 * len(tables)), squeeze=False)
    for ax, (name, t) in zip(axes[:, 0], tables.items()):
        dims = [c for c in t.columns if c.startswith("dim ") and not c.endswith(" rank")]
        for color, col in zip(COLORS[1:], dims):
            ax.plot(t["layer"], t[col], "-o", color=color, label=col + " (outlier)")
        ax.plot(t["layer"], t["top_other"], "-s", color=COLORS[0], label="largest non-outlier neuron")
        for _, r in t.iterrows():
            ax.annotate(
                str(int(r["top_other_dim"])),
                (r["layer"], r["top_other"]),
                fontsize=7,
                color=COLORS[0],
                xytext=(0, -10),
                textcoords="offset points",
                ha="center",
            )
        ax.plot(t["layer"], t["mean_all"], ":", color="black", label="mean of all neurons")
        ax.set(xlabel="layer (0 = embedding output)", ylabel="mean contribution |w·v|", title=f"{name}: contribution to position prediction")
        ax.xaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.legend(fontsize=8, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def contribution_heatmaps(maps: dict[str, np.ndarray]):
    """Heatmaps (positions x layers) of mean contribution, one panel per neuron (or summary), two to a row, each on its
    own colour scale (on a shared one the largest panel leaves the others black)."""
    fig, axes = plotting.grid(len(maps), columns=2, panel_height=2.6)
    for ax, (label, m) in zip(axes, maps.items()):
        im = ax.imshow(m.T, aspect="auto", origin="lower", cmap="magma", vmin=0, vmax=np.nanmax(m), interpolation="nearest")
        ax.set(title=label, xlabel="position", ylabel="layer")
        ax.yaxis.set_major_locator(matplotlib.ticker.MaxNLocator(integer=True))
        ax.grid(False)
        fig.colorbar(im, ax=ax)
    fig.supylabel("colour: mean contribution |w·v| (each panel its own scale)", fontsize=10)
    return fig


PROBE_ACCURACY = CHAPTER.table(
    "accuracy_by_layer",
    "layer dev_accuracy best_epoch converged centred_converged test_accuracy train_tokens test_tokens centred_test_accuracy shuffled_test_accuracy",
)


PROBE_SENTENCES = CHAPTER.table("accuracy_by_sentence", "layer seed sentence hits tokens")


PROBE_CONTRIBUTION = CHAPTER.table(
    "contribution_by_layer", "layer probe mean_all top_dim top_other_dim top_other outlier_first_share probe_seeds", r"dim \d+( rank)?"
)
CONTRIBUTION_ALL = CHAPTER.table("contribution_all_neurons", "layer dim mean_contribution")
CONTRIBUTION_BY_POSITION = CHAPTER.table("contribution_by_position", "position layer mean_contribution neuron")

SURE = 0.975  # an outlier ranks first (or not) in a layer when it does in at least this share of the sentence resamples


PAPER_LOW_LAYERS = 3 / 12  # "the lowest three layers" of the paper's 12-layer base models: the lowest quarter of the depth


def lowest_layers(n_layers: int, share: float = PAPER_LOW_LAYERS) -> int:
    """How many of a model's lowest contextual layers correspond to the paper's share of its depth (at least one):
    3 of 12, 2 of 6, 1 of 2."""
    return max(1, math.ceil(n_layers * share - 1e-9))


def unconverged(accuracy: pd.DataFrame, column: str) -> Outcome | None:
    """ "Not testable" when the probe was still learning at its last epoch in any of these layers: its accuracy and
    contributions are those of a probe cut short, and the claim is about a trained one."""
    still = accuracy.loc[~accuracy[column].astype(bool), "layer"].astype(int).tolist()
    if not still:
        return None
    return Outcome(
        UNTESTABLE,
        f"not testable at this scale: the probe was still improving at its last epoch (≥ {probe.STILL_RISING:.1%} development accuracy) in "
        f"layer{'s' if len(still) > 1 else ''} {', '.join(map(str, still))}; more epochs or training sentences (parameters epochs, n_train) would test it",
    )


def sentence_means(t: pd.DataFrame) -> dict[int, pd.DataFrame]:
    """A PROBE_SENTENCES table per layer: each test sentence's tokens right by the paper's probe, averaged over its
    trainings (`hits`), and the sentence's tokens: the sampled unit of an accuracy is the sentence, whose tokens go together."""
    mean = t.groupby(["layer", "sentence"], sort=True).agg(hits=("hits", "mean"), tokens=("tokens", "first"), seeds=("seed", "nunique")).reset_index()
    return {int(layer): part for layer, part in mean.groupby("layer")}


def layer_accuracies(tables: Tables, model: str, claim: Claim) -> dict[int, pd.DataFrame]:
    """`sentence_means` of the model's PROBE_SENTENCES table."""
    return sentence_means(tables.read(model, claim.chapter, PROBE_SENTENCES.name))


def sentence_share(hits: pd.Series, tokens: pd.Series, seeds: int, seed: int = 0) -> inference.Estimate:
    """A share of tokens (accuracy, or a difference of two) resampled by test sentence, averaged over `seeds` trainings."""
    return inference.cluster_share(hits.to_numpy(), tokens.to_numpy(), f"test sentences ({seeds} probe trainings averaged)", seed=seed)


@CHAPTER.rule
def probe_low_layers(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = tables.read(model, claim.chapter, claim.table)
    low = t[t["layer"].between(1, lowest_layers(int(t["layer"].max())))]
    if (low["shuffled_test_accuracy"] >= claim.margin).any():
        return Outcome(UNTESTABLE, "the shuffled-position control reaches the margin: the probe would score without position information")
    by_layer = layer_accuracies(tables, model, claim)
    units = []
    for layer in low["layer"].astype(int):
        part = by_layer[layer]
        units.append(unit(f"layer {layer}", sentence_share(part["hits"], part["tokens"], int(part["seeds"].min()), layer), claim.margin, of="layers"))
    settled = low["converged"].astype(bool).to_numpy()
    # a probe cut short under-reads its layer: only a layer that already holds, or a converged one, can decide
    if not any(u.decision.verdict == FAILS and ok for u, ok in zip(units, settled)):
        if cut_short := unconverged(low[[u.decision.verdict != HOLDS for u in units]], "converged"):
            return cut_short
    control = "shuffled-position probe: " + ", ".join(f"{a:.1%}" for a in low["shuffled_test_accuracy"])
    return from_units(units, claim, control=control)


@CHAPTER.rule
def probe_falls_with_depth(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = contextual(tables.read(model, claim.chapter, claim.table)).sort_values("layer")
    first, last = t.iloc[0], t.iloc[-1]
    by_layer = layer_accuracies(tables, model, claim)
    a, b = by_layer[int(first["layer"])].set_index("sentence"), by_layer[int(last["layer"])].set_index("sentence")
    seeds = int(min(a["seeds"].min(), b["seeds"].min()))
    estimate = sentence_share(a["hits"] - b["hits"].reindex(a.index), a["tokens"], seeds).scaled(100)  # the same sentences: paired
    decision = decide(estimate, claim.margin)
    # a probe cut short under-reads its layer: the first layer's makes the fall look smaller, the last layer's larger
    robust = {HOLDS: bool(last["converged"]), FAILS: bool(first["converged"])}.get(decision.verdict, bool(first["converged"] and last["converged"]))
    if not robust and (cut_short := unconverged(t.iloc[[0, -1]], "converged")):
        return cut_short
    text = f"test accuracy layer {int(first['layer'])} minus layer {int(last['layer'])}: {estimate.text(1, ' points')}"
    return outcome(decision, text, estimate)


@CHAPTER.rule
def outlier_top_contributor(tables: Tables, model: str, claim: Claim) -> Outcome:
    t = contextual(tables.read(model, claim.chapter, claim.table))
    ranks = [c for c in t.columns if c.startswith("dim ") and c.endswith(" rank")]
    if not ranks:
        return Outcome(UNTESTABLE, "no model-level outlier dimension in this model")
    if cut_short := unconverged(contextual(tables.read(model, claim.chapter, PROBE_ACCURACY.name)), "centred_converged"):
        return cut_short
    first = {probe: int((part[ranks].min(axis=1) == 1).sum()) for probe, part in t.groupby("probe")}
    share = t.loc[t["probe"] == "centred", "outlier_first_share"]
    layers, sure, sure_not = len(share), int((share >= SURE).sum()), int((share <= 1 - SURE).sum())
    low, high = sure / layers, (layers - sure_not) / layers  # every undecided layer counted against, then for, the claim
    verdict = HOLDS if low > claim.margin else FAILS if high <= claim.margin else INCONCLUSIVE
    seeds = int(t.loc[t["probe"] == "centred", "probe_seeds"].min())
    how = f"{seeds} trainings × a bootstrap over test sentences"
    estimate = inference.Estimate(first["centred"] / layers, low, high, f"layers counted; each layer decided over {how}")
    text = (
        f"with the centred probe an outlier dim ranks first in {first['centred']} of {layers} layers: surely (in ≥ {SURE:.1%} of {how}) "
        f"in {sure}, surely not in {sure_not}, undecided in {layers - sure - sure_not}"
    )
    control = f"paper's bias-free probe: first in {first['paper']} layers; trained on shuffled positions: first in {first['shuffled']}"
    return Outcome(verdict, text, estimate, None, control)
