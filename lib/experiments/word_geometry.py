"""Chapter 12's experiment (Biš et al. 2021, §5): the input-embedding matrix W raw, centered, scaled-centered and
post-processed (all-but-the-top with D = ceil(d/100)); the isotropy of each (Table 1) and its word-similarity scores
(Table 2: Pearson × 100 of cosine and of inner product with the human scores, pairs of single-token words)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from ..encode.models import LoadedModel
from ..measure import isotropy, metrics, transforms, vocabulary
from .schemas import ISOTROPY, WORD_SIMILARITY


def variants(w: np.ndarray) -> dict[str, np.ndarray]:
    """W and its post-processed versions, fitted on W itself (the paper's protocol)."""
    d = math.ceil(w.shape[1] / 100)
    return {
        "raw": w,
        "centered": transforms.Center().fit(w).transform(w),
        "centered-scaled": transforms.ScaledCenter().fit(w).transform(w),
        f"post-processed (D={d})": transforms.RemoveTopPCs(d).fit(w).transform(w),
    }


def isotropy_table(matrices: dict[str, np.ndarray], model: str) -> pd.DataFrame:
    """I1 = I(W), I2, IsoScore and norm statistics of every variant."""
    rows = [
        {"model": model, "variant": v, **isotropy.partition_measures(m), "IsoScore": isotropy.isoscore(m), **isotropy.norm_stats(m)}
        for v, m in matrices.items()
    ]
    return ISOTROPY.frame(rows)


def similarity_scores(matrices: dict[str, np.ndarray], a: np.ndarray, b: np.ndarray, gold: np.ndarray) -> pd.DataFrame:
    """Pearson × 100 of the cosine and the inner product of the pairs (rows a, b) with gold, per variant; NaN when fewer
    than three pairs are kept."""
    rows = []
    for variant, m in matrices.items():
        x, y = m[a], m[b]
        inner = np.einsum("nd,nd->n", x, y)
        cosine = inner / (np.linalg.norm(x, axis=1) * np.linalg.norm(y, axis=1))
        enough = len(gold) >= 3
        rows.append(
            {
                "variant": variant,
                "pearson_cosine": metrics.pearson_x100(cosine, gold) if enough else np.nan,
                "pearson_inner_product": metrics.pearson_x100(inner, gold) if enough else np.nan,
            }
        )
    return pd.DataFrame(rows)


def word_similarity(lm: LoadedModel, matrices: dict[str, np.ndarray], benchmarks: dict[str, pd.DataFrame]) -> tuple[pd.DataFrame, dict]:
    """Scores of every benchmark and variant, and each benchmark's kept pairs (token ids a, b and gold scores)."""
    frames, kept = [], {}
    for label, frame in benchmarks.items():
        a, b = vocabulary.single_token_ids(lm, frame["word1"].tolist()), vocabulary.single_token_ids(lm, frame["word2"].tolist())
        keep = (a >= 0) & (b >= 0)
        kept[label] = (a[keep], b[keep], frame["score"][keep].to_numpy())
        scores = similarity_scores(matrices, *kept[label])
        frames.append(scores.assign(model=lm.name, benchmark=label, pairs=len(frame), pairs_kept=int(keep.sum())))
    table = pd.concat(frames, ignore_index=True)
    return WORD_SIMILARITY.check(table[list(WORD_SIMILARITY.columns)]), kept
