"""asc.resampling: the one seeded percentile bootstrap, checked against the three it replaced (the corpus
median's chunked draws, glueCode's block of mean resamples, BLANCA's loop of resamples) and on its own rules."""

from __future__ import annotations

import math

import numpy as np
import pytest

from asc.errors import InputError
from asc.resampling import percentile_bootstrap


def _values(n: int = 57, seed: int = 4) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=n)


def test_batched_and_one_at_a_time_draw_the_same_resamples():
    v = _values()
    batched = percentile_bootstrap(lambda x: np.median(x, axis=1), [v], n_boot=300, seed=2, batched=True,
                                   max_chunk=len(v) * 7)  # 43 chunks of 7 resamples
    looped = percentile_bootstrap(np.median, [v], n_boot=300, seed=2)
    assert np.array_equal(batched.draws, looped.draws)
    assert (batched.low, batched.high) == (looped.low, looped.high)
    other = percentile_bootstrap(np.median, [v], n_boot=300, seed=3)
    assert not np.array_equal(other.draws, looped.draws)  # the seed matters


def test_the_former_three_bootstraps_give_the_same_intervals():
    v = _values()
    rng = np.random.default_rng(5)  # the corpus median's and glueCode's: one (n_boot, n) block of indices
    block = v[rng.integers(0, len(v), size=(500, len(v)))]
    medians, means = np.median(block, axis=1), block.mean(axis=1)
    boot = percentile_bootstrap(lambda x: np.median(x, axis=1), [v], n_boot=500, seed=5, batched=True)
    assert np.array_equal(boot.draws, medians)
    assert np.allclose([boot.low, boot.high], np.quantile(medians, [0.025, 0.975]), rtol=1e-12, atol=0)
    boot = percentile_bootstrap(lambda x: x.mean(axis=1), [v], n_boot=500, seed=5, batched=True)
    assert np.allclose([boot.low, boot.high], np.percentile(means, [2.5, 97.5]), rtol=1e-12, atol=0)
    w = _values(31, seed=9)  # BLANCA's: two samples resampled on their own, in turn
    rng = np.random.default_rng(1)
    diffs = []
    for _ in range(200):
        a, b = v[rng.integers(0, len(v), len(v))], w[rng.integers(0, len(w), len(w))]
        diffs.append(a.mean() - b.mean())
    boot = percentile_bootstrap(lambda a, b: a.mean() - b.mean(), [v, w], n_boot=200, seed=1)
    assert np.allclose(boot.draws, diffs, rtol=0, atol=0)
    assert np.allclose([boot.low, boot.high], np.percentile(diffs, [2.5, 97.5]), rtol=1e-12, atol=0)


def test_paired_samples_keep_their_pairs_and_non_finite_draws_are_left_out():
    x = np.arange(20.0)
    paired = percentile_bootstrap(lambda a, b: float(np.all(a == b)), [x, x.copy()], n_boot=50, seed=0, paired=True)
    assert np.all(paired.draws == 1.0)
    apart = percentile_bootstrap(lambda a, b: float(np.all(a == b)), [x, x.copy()], n_boot=50, seed=0)
    assert np.all(apart.draws == 0.0)
    flaky = percentile_bootstrap(lambda a: math.nan if a[0] < 10 else a[0], [x], n_boot=200, seed=0)
    assert np.isnan(flaky.draws).any() and 10 <= flaky.low <= flaky.high <= 19
    never = percentile_bootstrap(lambda a: math.nan, [x], n_boot=20, seed=0)
    assert math.isnan(never.low) and math.isnan(never.high)


@pytest.mark.parametrize("kwargs", [{"samples": []}, {"samples": [[]]}, {"samples": [[1.0], [1.0, 2.0]], "paired": True},
                                    {"samples": [[1.0]], "level": 1.0}, {"samples": [[1.0]], "n_boot": 0},
                                    {"samples": [[1.0], [2.0]], "batched": True}])
def test_what_cannot_be_bootstrapped_is_an_input_error(kwargs):
    with pytest.raises(InputError):
        percentile_bootstrap(np.mean, **kwargs)
