"""asc.corpus.bootstrap: histogram medians and bootstraps against exact computations on raw values.

The error bound the module states is half a bin (0.5e-4). The snippet-level bootstrap is compared resample for
resample with the exact weighted median of the raw values under the same weights (shared through
``snippet_weights``), with both kinds of weights (multinomial, Poisson); its Poisson intervals are compared with
the multinomial ones on a clustered corpus of 20,000 snippets; the node-level one, whose draws come from the
exact bootstrap distribution, is compared with resampling the raw values many times.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asc.concepts import bootstrap_median
from asc.corpus import bootstrap
from asc.corpus.bootstrap import (
    N_BINS,
    POISSON_FROM,
    RESOLUTION,
    bin_of,
    cluster_bootstrap,
    histograms,
    lower_median_bins,
    node_bootstrap,
    snippet_weights,
    weight_kind,
)
from asc.errors import InputError

BOUND = RESOLUTION / 2


def lower_median(values: np.ndarray, weights: np.ndarray | None = None) -> float:
    """The exact lower median (order statistic ceil(n/2)) of values repeated by integer weights."""
    weights = np.ones(len(values)) if weights is None else weights
    order = np.argsort(values, kind="stable")
    cum = np.cumsum(weights[order])
    if cum[-1] == 0:
        return np.nan
    return float(values[order][np.searchsorted(cum, np.ceil(cum[-1] / 2))])


def corpus(n_snippets: int, seed: int, groups: int = 3):
    """Node values clustered by snippet (a per-snippet difficulty), as in real runs."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 30, n_snippets)
    snippet = np.repeat(np.arange(n_snippets), sizes)
    level = rng.beta(2, 2, n_snippets)[snippet]
    values = np.clip(level + rng.normal(0, 0.15, len(snippet)), 0, 1)
    return snippet, values, rng.integers(0, groups, len(snippet))


@given(st.lists(st.floats(0, 1), min_size=1, max_size=200))
@settings(max_examples=100, deadline=None)
def test_lower_median_bin_is_the_exact_lower_median_to_half_a_bin(values):
    v = np.array(values)
    hist = np.bincount(bin_of(v), minlength=N_BINS)
    assert abs(lower_median_bins(hist) * RESOLUTION - lower_median(v)) <= BOUND + 1e-12


def test_bins_cover_zero_to_one():
    assert list(bin_of(np.array([0.0, 0.00004, 0.00005001, 0.5, 1.0, 1.2, -0.1]))) == [0, 0, 1, 5000, 10000, 10000, 0]
    assert (lower_median_bins(np.zeros(N_BINS)) == -1)


@pytest.mark.parametrize("kind", ["multinomial", "poisson"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_snippet_bootstrap_equals_exact_weighted_medians_resample_for_resample(seed, kind):
    snippet, values, groups = corpus(300, seed)
    n_boot = 60
    got = cluster_bootstrap(snippet, bin_of(values), groups, 3, 300, n_boot=n_boot, seed=seed, weights=kind)
    weights = np.concatenate(list(snippet_weights(300, n_boot, seed, kind=kind)), axis=1)  # (snippets, n_boot)
    for r in range(n_boot):
        w = weights[snippet, r]
        for g in range(3):
            exact = lower_median(values[groups == g], w[groups == g])
            assert abs(got.draws[r, g] - exact) <= BOUND + 1e-12
        assert abs(got.draws[r, 3] - lower_median(values, w)) <= BOUND + 1e-12  # the pooled group
    assert got.ci_low[0] <= got.median[0] <= got.ci_high[0]


@pytest.mark.parametrize("kind", ["multinomial", "poisson"])
def test_snippet_bootstrap_widens_its_window_when_medians_jump(kind):
    """Two modes far apart and a median between them: resample medians jump from one mode to the other,
    outside any narrow window around the median; the result must still be exact."""
    rng = np.random.default_rng(5)
    n = 2000
    snippet = np.arange(n)
    values = np.where(np.arange(n) < n // 2, rng.uniform(0.05, 0.1, n), rng.uniform(0.9, 0.95, n))
    got = cluster_bootstrap(snippet, bin_of(values), np.zeros(n, dtype=int), 1, n, n_boot=40, seed=1, total=False,
                            weights=kind)
    weights = np.concatenate(list(snippet_weights(n, 40, 1, kind=kind)), axis=1)
    exact = np.array([lower_median(values, weights[:, r]) for r in range(40)])
    np.testing.assert_allclose(got.draws[:, 0], exact, atol=BOUND + 1e-12)
    assert (exact < 0.5).any() and (exact > 0.5).any()  # the case the window must handle


@pytest.mark.parametrize("kind", ["multinomial", "poisson"])
def test_resamples_do_not_depend_on_the_block_size(kind):
    a = np.concatenate(list(snippet_weights(50, 30, 3, block=7, kind=kind)), axis=1)
    b = np.concatenate(list(snippet_weights(50, 30, 3, kind=kind)), axis=1)
    np.testing.assert_array_equal(a, b)
    assert (a.sum(axis=0) == 50).all() == (kind == "multinomial")  # n_snippets draws per resample, or about


def test_large_corpora_draw_poisson_weights():
    assert weight_kind(POISSON_FROM - 1) == "multinomial" and weight_kind(POISSON_FROM) == "poisson"
    multinomial = next(snippet_weights(POISSON_FROM - 1, 5, 0))
    assert (multinomial.sum(axis=0) == POISSON_FROM - 1).all()
    poisson = next(snippet_weights(POISSON_FROM, 5, 0))
    assert not (poisson.sum(axis=0) == POISSON_FROM).all()
    with pytest.raises(InputError, match="choose one of"):
        weight_kind(100, "bayesian")


def test_poisson_weights_follow_poisson_one():
    """Independent Poisson(1) counts: the frequencies of 0..5 within 0.002 of the pmf, no correlation between
    snippets or resamples."""
    w = np.concatenate(list(snippet_weights(20_000, 50, 7, kind="poisson")), axis=1)  # a million weights
    freq = np.bincount(w.astype(int).ravel(), minlength=6)[:6] / w.size
    pmf = np.exp(-1) / np.array([1, 1, 2, 6, 24, 120])
    np.testing.assert_allclose(freq, pmf, atol=2e-3)
    assert w.mean() == pytest.approx(1, abs=5e-3) and w.var() == pytest.approx(1, abs=1e-2)
    assert abs(np.corrcoef(w[:-1].ravel(), w[1:].ravel())[0, 1]) < 5e-3
    assert abs(np.corrcoef(w[:, :-1].ravel(), w[:, 1:].ravel())[0, 1]) < 5e-3


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_poisson_intervals_agree_with_the_multinomial_ones(seed):
    """The Poisson bootstrap against the exact multinomial one on a clustered corpus of 20,000 snippets, 1,000
    resamples each: interval ends and medians within 15% of the interval's width (the Monte Carlo error of
    1,000 resamples alone is about 5%), bootstrap standard deviations within 10%."""
    snippet, values, groups = corpus(20_000, seed)
    bins = bin_of(values)
    exact, poisson = (cluster_bootstrap(snippet, bins, groups, 3, 20_000, n_boot=1000, seed=seed, weights=kind)
                      for kind in ("multinomial", "poisson"))
    width = exact.ci_high - exact.ci_low
    assert (width > 0).all()
    for got, want in ((poisson.ci_low, exact.ci_low), (poisson.ci_high, exact.ci_high), (poisson.median, exact.median)):
        assert (np.abs(got - want) <= 0.15 * width).all()
    np.testing.assert_allclose(poisson.boot_std, exact.boot_std, rtol=0.1)


def test_float64_sums_give_the_float32_result(monkeypatch):
    """Weighted counts from 2^24 on are summed in float64; the draws are the same."""
    snippet, values, groups = corpus(400, 3)
    fast = cluster_bootstrap(snippet, bin_of(values), groups, 3, 400, n_boot=30, seed=2, weights="poisson")
    monkeypatch.setattr(bootstrap, "_EXACT_F32", 1)  # every block takes the float64 path
    slow = cluster_bootstrap(snippet, bin_of(values), groups, 3, 400, n_boot=30, seed=2, weights="poisson")
    np.testing.assert_array_equal(fast.draws, slow.draws)


def test_node_bootstrap_matches_resampling_the_raw_values():
    rng = np.random.default_rng(0)
    values = rng.beta(5, 2, 3001)  # odd: the lower median is the median
    hist = np.bincount(bin_of(values), minlength=N_BINS)
    got = node_bootstrap(hist, n_boot=4000, seed=0)
    med, lo, hi, std = bootstrap_median(values, n_boot=4000, seed=0)
    assert abs(got.median[0] - med) <= 2e-3
    assert abs(got.ci_low[0] - lo) <= 2e-3 and abs(got.ci_high[0] - hi) <= 2e-3
    assert got.boot_std[0] == pytest.approx(std, rel=0.15)
    assert (got.ci_low[0] >= 0.6) == (lo >= 0.6)  # the same verdict against the paper's line


def test_node_bootstrap_distribution_is_the_exact_one():
    """A tiny sample where the exact bootstrap distribution of the median is easy to enumerate by simulation."""
    values = np.array([0.1, 0.2, 0.2, 0.7, 0.9])
    hist = np.bincount(bin_of(values), minlength=N_BINS)
    draws = node_bootstrap(hist, n_boot=40_000, seed=2).draws[:, 0]
    rng = np.random.default_rng(3)
    simulated = np.sort(values[rng.integers(0, 5, (40_000, 5))], axis=1)[:, 2]  # lower median of 5 = 3rd
    for v in np.unique(values):
        assert np.mean(np.isclose(draws, v)) == pytest.approx(np.mean(simulated == v), abs=0.01)


def test_groups_are_independent_of_each_other_and_seeded():
    _, values, groups = corpus(100, 1)
    hist = histograms(bin_of(values), groups, 3)
    a = node_bootstrap(hist, n_boot=200, seed=4)
    b = node_bootstrap(hist[:2], n_boot=200, seed=4)
    np.testing.assert_array_equal(a.draws[:, :2], b.draws)
    assert not np.array_equal(a.draws, node_bootstrap(hist, n_boot=200, seed=5).draws)


def test_empty_groups_are_nan_not_zero():
    hist = np.zeros((2, N_BINS), dtype=np.int64)
    hist[0, 4000] = 3
    got = node_bootstrap(hist, n_boot=50)
    assert got.median[0] == pytest.approx(0.4) and np.isnan(got.median[1]) and np.isnan(got.ci_low[1])
    clustered = cluster_bootstrap(np.array([0, 1]), np.array([10, 20]), np.array([0, 0]), 2, 2, n_boot=20)
    assert np.isnan(clustered.median[1]) and not np.isnan(clustered.median[2])


@pytest.mark.parametrize("bad", [{"n_boot": 0}, {"ci": 1.5}])
def test_bad_settings_name_the_fix(bad):
    with pytest.raises(InputError, match="give"):
        node_bootstrap(np.ones(N_BINS), **bad)
