"""The result tables' columns, declared once: the experiments build their tables through these schemas, the chapters
write them (`Results.table`) and the scorecard reads them back (`scorecard.Tables.read`) by the same declaration, so a
renamed column fails a fast test instead of the slow book run.

A schema names its chapter, its table and its columns in order; `extra` is a pattern for columns whose names come from
the data (e.g. one pair of columns per outlier dimension).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import pandas as pd

from ..errors import require


@dataclass(frozen=True)
class Schema:
    chapter: str
    name: str
    columns: tuple[str, ...]
    extra: str | None = None  # regular expression for data-named columns, allowed after the declared ones

    def check(self, frame: pd.DataFrame) -> pd.DataFrame:
        """The frame, if it has exactly the declared columns (plus any matching `extra`); else one line naming the
        difference."""
        have = [str(c) for c in frame.columns]
        missing = [c for c in self.columns if c not in have]
        unknown = [c for c in have if c not in self.columns and not (self.extra and re.fullmatch(self.extra, c))]
        require(
            not missing and not unknown,
            f"table {self.chapter}/{self.name}: columns differ from its schema (lib/experiments/schemas.py): "
            f"missing {missing or 'none'}, undeclared {unknown or 'none'}",
        )
        return frame

    def frame(self, rows: Iterable[dict]) -> pd.DataFrame:
        """A table from rows (dicts), columns in the declared order, checked."""
        frame = pd.DataFrame(list(rows))
        if frame.empty:
            frame = pd.DataFrame(columns=list(self.columns))
        declared = [c for c in self.columns if c in frame.columns]
        return self.check(frame[declared + [c for c in frame.columns if c not in self.columns]])


def _s(chapter: str, name: str, columns: str, extra: str | None = None) -> Schema:
    return Schema(chapter, name, tuple(columns.split()), extra)


ANISOTROPY = _s(
    "01_anisotropy", "anisotropy_by_layer", "layer mean_cosine std_cosine ci95_low ci95_high n_pairs centered_mean_cosine excess_ci95_low excess_ci95_high"
)
EXTREMES_BY_LAYER = _s("02_outlier_neurons", "extreme_dimensions_by_layer", "layer argmin_dim argmin_percent argmax_dim argmax_percent")
EXTREMES_POOLED = _s("02_outlier_neurons", "extreme_dimensions_pooled", "kind dim percent n_vectors model spec")
OUTLIER_DIMENSIONS = _s("02_outlier_neurons", "outlier_dimensions", "dim sign max_abs_z layers n_layers model_outlier")
MEAN_VECTORS = _s("02_outlier_neurons", "mean_vectors", "layer dim mean")
EMBEDDING_TABLES = _s(
    "03_positional_origin",
    "embedding_tables",
    "table n_rows argmax_dim argmax_percent argmin_dim argmin_percent rows_with_flagged_dim rows_with_flagged_dim_percent",
)
PROPAGATION = _s("03_positional_origin", "propagation", "stage dim positions positions_flagged median_z max_abs_z positions_flagged_percent")
LAYERNORM_RANKS = _s("03_positional_origin", "layernorm_ranks", "layer layernorm module param dim sign value rank rank_abs width")
PROBE_ACCURACY = _s(
    "04_position_probe",
    "accuracy_by_layer",
    "layer dev_accuracy best_epoch test_accuracy train_tokens test_tokens centred_test_accuracy shuffled_test_accuracy",
)
PROBE_CONTRIBUTION = _s("04_position_probe", "contribution_by_layer", "layer probe mean_all top_dim top_other_dim top_other", r"dim \d+( rank)?")
PRETRAIN_SUMMARY = _s(
    "05_pretraining",
    "summary",
    "model seed position_embeddings parameters_millions n_layers width steps tokens_seen_millions training_minutes valid_perplexity unigram_perplexity "
    "top_extreme_kind top_extreme_dim top_extreme_percent model_outliers",
)
PRETRAIN_GAP = _s(
    "05_pretraining",
    "perplexity_gap",
    "seed validation_blocks masked_tokens perplexity_with_pe perplexity_without_pe ratio_without_over_with ratio_low_95 ratio_high_95",
)
PRETRAIN_OUTLIERS = Schema("05_pretraining", "outlier_dimensions", OUTLIER_DIMENSIONS.columns)
GEOMETRY_BY_VARIANT = _s(
    "06_clipping_whitening",
    "geometry_by_variant",
    "variant layer mean_cosine ci95 change_vs_raw change_vs_raw_ci95 self_similarity self_similarity_minus_anisotropy clipped_dims "
    "whitening_dropped_components",
)
WIC_GRID = _s("07_wic", "accuracy_grid", "variant layer split threshold accuracy")
WIC_BEST = _s(
    "07_wic",
    "best",
    "model spec variant layer threshold train_accuracy dev_accuracy_of_that_choice dev_best_accuracy dev_pairs dev_right_only_here dev_right_only_raw "
    "dev_right_only_here_vs_clipped dev_right_only_clipped",
)
STS_BY_LAYER = _s("08_sts", "spearman_by_layer", "dataset variant layer spearman_x100 subset_mean_spearman_x100 n_pairs n_sentences")
STS_BEST = _s("08_sts", "best", "model spec dataset variant layer spearman_x100 subset_mean_spearman_x100 embedding_output_spearman_x100")
GLOVE_BASELINE = _s(
    "08_sts", "glove_baseline", "dataset spearman_x100 tokens_in_vocabulary_percent spearman_x100_words_only tokens_in_vocabulary_percent_words_only"
)
FROZEN_ACCURACY = _s("09_supervised", "accuracy_by_layer", "task variant layer dev_accuracy test_accuracy C converged clipped_dims whitening_fit_texts")
FROZEN_BEST = _s(
    "09_supervised",
    "best",
    "model spec task variant best_test best_test_layer test_at_best_dev_layer best_dev_layer test_examples test_right_only_here test_right_only_raw",
)
EMBEDDING_MATRIX = _s(
    "10_common_direction",
    "embedding_matrix",
    "model vocabulary width average_norm_raw mean_vector_norm_raw ratio_raw sigma1_over_sigma2_raw sigma1_over_sigma2_centered "
    "top_direction_mean_cosine check_rows mean_pairwise_cosine_brute_force mean_pairwise_cosine_from_mean_unit_vector reference_tokens",
)
COVERAGE = _s("11_rare_words", "coverage", "unit distinct total items_for_30% items_for_50% items_for_98%")
RARE_COSINE = _s("11_rare_words", "unused_cosine_by_frequency", "bin_start bin_end n_tokens mean_cosine std_cosine")
ISOTROPY = _s("12_isotropy_word_similarity", "isotropy", "model variant I1 I2 IsoScore average_norm mean_vector_norm ratio")
WORD_SIMILARITY = _s("12_isotropy_word_similarity", "word_similarity", "model benchmark variant pairs pairs_kept pearson_cosine pearson_inner_product")
CALIBRATION_SUMMARY = _s(
    "13_isotropy_calibration",
    "summary",
    "model task metric method runs score_mean score_std difference p p_student significant I1_mean I1_std I2_mean I2_std I1_context_mean "
    "I2_context_mean time_ratio",
)

SCHEMAS: dict[tuple[str, str], Schema] = {
    (s.chapter, s.name): s
    for s in (
        ANISOTROPY,
        EXTREMES_BY_LAYER,
        EXTREMES_POOLED,
        OUTLIER_DIMENSIONS,
        MEAN_VECTORS,
        EMBEDDING_TABLES,
        PROPAGATION,
        LAYERNORM_RANKS,
        PROBE_ACCURACY,
        PROBE_CONTRIBUTION,
        PRETRAIN_SUMMARY,
        PRETRAIN_GAP,
        PRETRAIN_OUTLIERS,
        GEOMETRY_BY_VARIANT,
        WIC_GRID,
        WIC_BEST,
        STS_BY_LAYER,
        STS_BEST,
        GLOVE_BASELINE,
        FROZEN_ACCURACY,
        FROZEN_BEST,
        EMBEDDING_MATRIX,
        COVERAGE,
        RARE_COSINE,
        ISOTROPY,
        WORD_SIMILARITY,
        CALIBRATION_SUMMARY,
    )
}


def schema(chapter: str, table: str) -> Schema:
    """The declared schema of a chapter's table; one line when there is none."""
    require((chapter, table) in SCHEMAS, f"no schema for table {chapter}/{table}; declare it in lib/experiments/schemas.py")
    return SCHEMAS[(chapter, table)]
