"""BLANCA's metrics: MRR and NDCG (R), the independent-samples t-statistic (L, F), Pearson r with its p-value
(H, U), and a seeded percentile bootstrap interval for any of them.

- **R** (paper section 4.1.3): answers are ranked by the model's similarity to the question, most similar first
  (ties keep the answers' order in the item). :func:`reciprocal_rank` is 1/rank of the first answer with the
  highest grade (every answer tied at the top grade counts as "the best answer"; the authors' code takes the
  most-voted one). :func:`ndcg` uses *linear* gains (the grade itself, the vote count in the paper's data) and
  the ``log2(rank + 1)`` discount over the whole list, no cut-off, divided by the same sum for the answers sorted
  by grade: the paper only says "standard" NDCG, and this is what its repository's ranking script computes
  (Järvelin and Kekäläinen's DCG). For 1/0 grades it equals the exponential-gain variant. :func:`ranking_summary`
  gives both means with their standard errors, as Table 3 reports them.
- **L, F** (sections 4.2.3, 4.3.3): "independent sample t-tests" between the cosine distances of positive and
  negative pairs. The paper does not name the variant; its repository calls ``scipy.stats.ttest_ind`` with the
  default ``equal_var=True``, i.e. **Student's** t with pooled variance and ``n1 + n2 - 2`` degrees of freedom, so
  that is our default; ``equal_var=False`` gives Welch's t (unequal variances, Welch-Satterthwaite df), the safer
  test when negatives outnumber positives as in F. The sign is ours: ``t = (mean_neg - mean_pos) / se`` is positive
  when positives are closer, as the paper's tables print it (they report the size of the separation).
- **H, U** (sections 4.4.3, 4.5.3): Pearson r between the target and the embedding distance, with the two-sided
  p-value of ``t = r * sqrt((n - 2) / (1 - r^2))`` on ``n - 2`` degrees of freedom (what ``scipy.stats.pearsonr``
  computes through the beta distribution).
- :func:`bootstrap_interval`: the percentile interval of a statistic over seeded resamples (pairs resampled
  together with ``paired=True``, e.g. for r; each sample on its own otherwise, e.g. positives and negatives for t).
  The paper reports standard errors (R) and p-values only; the intervals are ours.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy import stats

from asc.errors import InputError
from asc.resampling import percentile_bootstrap

__all__ = ["Correlation", "Interval", "RankingSummary", "TTest", "bootstrap_interval", "ndcg", "pearson",
           "ranking_order", "ranking_summary", "reciprocal_rank", "t_test"]


@dataclass(frozen=True)
class RankingSummary:
    """Mean reciprocal rank and mean NDCG over ``n`` questions, with the standard errors of the means."""

    mrr: float
    ndcg: float
    mrr_se: float
    ndcg_se: float
    n: int


@dataclass(frozen=True)
class TTest:
    """An independent-samples t-test of positive vs negative distances (``t > 0``: positives are closer)."""

    t: float
    df: float
    p: float
    mean_pos: float
    mean_neg: float
    n_pos: int
    n_neg: int
    equal_var: bool


@dataclass(frozen=True)
class Correlation:
    """Pearson's r over ``n`` pairs and its two-sided p-value (NaN for constant input)."""

    r: float
    p: float
    n: int


@dataclass(frozen=True)
class Interval:
    """A statistic on the data (``estimate``) and its seeded percentile bootstrap interval at ``level``."""

    estimate: float
    low: float
    high: float
    level: float
    n_boot: int


def _pair(scores: Sequence[float], grades: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    s, g = np.asarray(scores, dtype=float), np.asarray(grades, dtype=float)
    if s.ndim != 1 or s.shape != g.shape or len(s) == 0:
        raise InputError(f"one score per answer is needed ({len(s)} scores, {len(g)} grades)")
    if g.min() < 0 or g.max() <= 0:
        raise InputError("grades must be >= 0 with at least one above 0")
    return s, g


def ranking_order(scores: Sequence[float]) -> list[int]:
    """Answer positions from most to least similar (a stable sort: ties keep the item's order)."""
    return sorted(range(len(scores)), key=lambda i: -float(scores[i]))


def reciprocal_rank(scores: Sequence[float], grades: Sequence[float]) -> float:
    """1 / the rank, in the order of ``scores`` (higher is more similar), of the first answer with the top grade."""
    s, g = _pair(scores, grades)
    best = g.max()
    for rank, i in enumerate(ranking_order(list(s)), 1):
        if g[i] == best:
            return 1.0 / rank
    raise AssertionError("unreachable: some answer has the top grade")


def ndcg(scores: Sequence[float], grades: Sequence[float]) -> float:
    """NDCG of the ranking by ``scores``: sum of grade / log2(rank + 1), over the same sum for the ideal order."""
    s, g = _pair(scores, grades)
    discounts = 1.0 / np.log2(np.arange(2, len(g) + 2))
    dcg = float(np.sum(g[ranking_order(list(s))] * discounts))
    ideal = float(np.sum(np.sort(g)[::-1] * discounts))
    return dcg / ideal


def _sem(values: np.ndarray) -> float:
    return float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else math.nan


def ranking_summary(scores: Sequence[Sequence[float]], grades: Sequence[Sequence[float]]) -> RankingSummary:
    """MRR and mean NDCG over questions (one score list and one grade list per question), with standard errors."""
    if len(scores) != len(grades) or not scores:
        raise InputError(f"one score list per question is needed ({len(scores)} score lists, {len(grades)} questions)")
    rr = np.array([reciprocal_rank(s, g) for s, g in zip(scores, grades)])
    nd = np.array([ndcg(s, g) for s, g in zip(scores, grades)])
    return RankingSummary(float(rr.mean()), float(nd.mean()), _sem(rr), _sem(nd), len(rr))


def t_test(positives: Sequence[float], negatives: Sequence[float], equal_var: bool = True) -> TTest:
    """Student's (``equal_var=True``, the paper's) or Welch's t of negative minus positive mean distance."""
    a, b = np.asarray(positives, dtype=float), np.asarray(negatives, dtype=float)
    n1, n2 = len(a), len(b)
    if n1 < 2 or n2 < 2:
        raise InputError(f"a t-test needs two or more distances on each side ({n1} positive, {n2} negative)")
    v1, v2 = a.var(ddof=1), b.var(ddof=1)
    if equal_var:
        df = float(n1 + n2 - 2)
        se = math.sqrt(((n1 - 1) * v1 + (n2 - 1) * v2) / df * (1 / n1 + 1 / n2))
    else:
        q1, q2 = v1 / n1, v2 / n2
        se = math.sqrt(q1 + q2)
        df = (q1 + q2) ** 2 / (q1 ** 2 / (n1 - 1) + q2 ** 2 / (n2 - 1)) if se > 0 else float(n1 + n2 - 2)
    diff = float(b.mean() - a.mean())
    if se > 0:
        t = diff / se
        p = float(2 * stats.t.sf(abs(t), df))
    else:  # no spread at all: the groups are either identical or perfectly apart
        t, p = (math.copysign(math.inf, diff), 0.0) if diff else (math.nan, math.nan)
    return TTest(t, float(df), p, float(a.mean()), float(b.mean()), n1, n2, equal_var)


def pearson(x: Sequence[float], y: Sequence[float]) -> Correlation:
    """Pearson's r of ``x`` and ``y`` and its two-sided p-value (t-distribution, n - 2 degrees of freedom)."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise InputError(f"x and y must be two lists of the same length ({a.size} and {b.size})")
    n = len(a)
    if n < 3:
        raise InputError(f"a correlation with a p-value needs three pairs or more (got {n})")
    da, db = a - a.mean(), b - b.mean()
    norm = math.sqrt(float(np.sum(da * da)) * float(np.sum(db * db)))
    if norm == 0:
        return Correlation(math.nan, math.nan, n)
    r = max(-1.0, min(1.0, float(np.sum(da * db)) / norm))
    if abs(r) == 1.0:
        return Correlation(r, 0.0, n)
    t = r * math.sqrt((n - 2) / (1 - r * r))
    return Correlation(r, float(2 * stats.t.sf(abs(t), n - 2)), n)


def bootstrap_interval(statistic: Callable[..., float], samples: Sequence[Sequence[float]], n_boot: int = 1000,
                       level: float = 0.95, seed: int = 0, paired: bool = False) -> Interval:
    """Seeded percentile bootstrap of ``statistic(*samples)``. With ``paired`` the samples have one length and are
    resampled with shared indices (pairs stay together); otherwise each sample is resampled on its own. Resamples
    whose statistic is not finite (e.g. a constant resample for r) are left out of the percentiles."""
    boot = percentile_bootstrap(statistic, samples, n_boot=n_boot, seed=seed, level=level, paired=paired)
    estimate = float(statistic(*(np.asarray(s, dtype=float) for s in samples)))
    return Interval(estimate, boot.low, boot.high, level, n_boot)
