"""The one seeded percentile bootstrap: a statistic on resamples drawn with replacement, and its interval.

Every interval the project reports from resampled items comes from :func:`percentile_bootstrap`: corpus medians
(:func:`asc.concepts.bootstrap_median`), glueCode accuracies (``probes.gluecode.zeroshot``) and BLANCA's statistics
(``probes.blanca.metrics.bootstrap_interval``). The resample indices are drawn from one seeded generator, row by
row, so the draws do not depend on how they are batched: a ``batched`` statistic (a function of a ``(k, n)``
array of resamples returning ``k`` values, e.g. ``np.median(x, axis=1)``) sees the same resamples, in chunks of
at most ``max_chunk`` values (memory stays bounded on large corpora), as a statistic called once per resample.

The interval is the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles (linear interpolation) of the finite
draws; a resample whose statistic is not finite (e.g. Pearson's r of a constant resample) is left out of them.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from asc.errors import InputError

__all__ = ["Bootstrap", "percentile_bootstrap"]


@dataclass(frozen=True)
class Bootstrap:
    """The statistic on each resample (``draws``, in draw order, non-finite ones kept) and the percentile
    interval ``(low, high)`` of the finite ones at ``level`` (NaN when none is finite)."""

    draws: np.ndarray
    low: float
    high: float
    level: float


def _indices(rng: np.random.Generator, n: int, k: int) -> np.ndarray:
    return rng.integers(0, n, size=(k, n))


def percentile_bootstrap(statistic: Callable[..., object], samples: Sequence[Sequence[float] | np.ndarray],
                         n_boot: int = 1000, seed: int = 0, level: float = 0.95, paired: bool = False,
                         batched: bool = False, max_chunk: int = 2_000_000) -> Bootstrap:
    """Seeded percentile bootstrap of ``statistic(*samples)`` over ``n_boot`` resamples.

    With ``paired`` (or one sample) every sample is resampled with the same indices (pairs stay together);
    otherwise each sample is resampled on its own, in turn. ``batched``: ``statistic`` takes ``(k, n)`` arrays
    of resamples and returns ``k`` values (one sample, or paired samples only)."""
    arrays = [np.asarray(s, dtype=np.float64) for s in samples]
    if not arrays or any(len(a) == 0 for a in arrays):
        raise InputError("the bootstrap needs one or more non-empty samples")
    shared = paired or len(arrays) == 1
    if shared and len({len(a) for a in arrays}) > 1:
        raise InputError(f"paired samples must have one length (got {', '.join(str(len(a)) for a in arrays)})")
    if not 0 < level < 1 or n_boot < 1:
        raise InputError(f"level must lie between 0 and 1 and n_boot be positive (got {level}, {n_boot})")
    if batched and not shared:
        raise InputError("a batched statistic needs one sample or paired samples")
    rng = np.random.default_rng(seed)
    if batched:
        n = len(arrays[0])
        per_chunk = max(1, max_chunk // n)
        chunks = []
        for start in range(0, n_boot, per_chunk):
            idx = _indices(rng, n, min(per_chunk, n_boot - start))
            chunks.append(np.asarray(statistic(*(a[idx] for a in arrays)), dtype=np.float64))
        draws = np.concatenate(chunks)
    else:
        values = []
        for _ in range(n_boot):
            if shared:
                idx = _indices(rng, len(arrays[0]), 1)[0]
                resampled = [a[idx] for a in arrays]
            else:
                resampled = [a[_indices(rng, len(a), 1)[0]] for a in arrays]
            values.append(float(statistic(*resampled)))  # type: ignore[arg-type]
        draws = np.array(values, dtype=np.float64)
    finite = draws[np.isfinite(draws)]
    tail = round((1 - level) / 2, 12)  # 0.025 for 95%, not 0.025000000000000022
    low, high = np.quantile(finite, [tail, 1 - tail]) if len(finite) else (math.nan, math.nan)
    return Bootstrap(draws, float(low), float(high), level)
