"""BLANCA's metrics (probes.blanca.metrics) against values worked out by hand, and against scipy."""

import math

import numpy as np
import pytest
from scipy import stats

from asc.errors import InputError
from probes.blanca.metrics import (
    bootstrap_interval,
    ndcg,
    pearson,
    ranking_order,
    ranking_summary,
    reciprocal_rank,
    t_test,
)


def test_reciprocal_rank_of_the_best_answer():
    # similarities rank the answers 2, 0, 1; the best (grade 5) answer is answer 0, second in that order
    assert ranking_order([0.5, 0.1, 0.9]) == [2, 0, 1]
    assert reciprocal_rank([0.5, 0.1, 0.9], [5, 1, 0]) == 0.5
    assert reciprocal_rank([0.9, 0.1, 0.5], [5, 1, 0]) == 1.0
    assert reciprocal_rank([0.1, 0.2, 0.9], [5, 1, 0]) == pytest.approx(1 / 3)
    # two answers share the top grade: the first of them in the ranking counts
    assert reciprocal_rank([0.1, 0.9, 0.5], [1, 0, 1]) == 0.5


def test_ndcg_linear_gains_and_log2_discount():
    # ranking by similarity: answers 2, 0, 1 with grades 0, 3, 1
    # DCG = 0/log2(2) + 3/log2(3) + 1/log2(4) = 1.892789 + 0.5 ; ideal: 3/1 + 1/log2(3) + 0 = 3.630930
    dcg = 3 / math.log2(3) + 1 / 2
    idcg = 3 + 1 / math.log2(3)
    assert ndcg([0.5, 0.1, 0.9], [3, 1, 0]) == pytest.approx(dcg / idcg)
    assert ndcg([0.5, 0.1, 0.9], [3, 1, 0]) == pytest.approx(2.392789 / 3.630930, abs=1e-6)
    assert ndcg([0.9, 0.5, 0.1], [3, 1, 0]) == pytest.approx(1.0)
    # binary relevance with the relevant answer third of four: 1/log2(4) = 0.5
    assert ndcg([0.9, 0.8, 0.7, 0.6], [0, 0, 1, 0]) == pytest.approx(0.5)


def test_ranking_summary_means_and_standard_errors():
    summary = ranking_summary([[0.9, 0.1], [0.1, 0.9], [0.2, 0.1, 0.9]], [[1, 0], [1, 0], [1, 0, 0]])
    rr = [1.0, 0.5, 0.5]  # the third question's own answer comes second
    assert summary.mrr == pytest.approx(np.mean(rr)) and summary.n == 3
    assert summary.mrr_se == pytest.approx(np.std(rr, ddof=1) / math.sqrt(3))
    assert summary.ndcg == pytest.approx((1 + 1 / math.log2(3) + 1 / math.log2(3)) / 3)


def test_ranking_inputs_are_checked():
    with pytest.raises(InputError, match="one score per answer"):
        reciprocal_rank([0.1, 0.2], [1, 0, 0])
    with pytest.raises(InputError, match="at least one above 0"):
        ndcg([0.1, 0.2], [0, 0])


def test_student_t_by_hand_and_as_scipy():
    pos, neg = [1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]
    # means 2 and 5.5; variances 1 and 5/3; pooled (2*1 + 3*5/3) / 5 = 1.4; se = sqrt(1.4 * (1/3 + 1/4))
    se = math.sqrt(1.4 * (1 / 3 + 1 / 4))
    result = t_test(pos, neg)
    assert result.t == pytest.approx(3.5 / se) and result.t == pytest.approx(3.872983, abs=1e-6)
    assert result.df == 5 and result.mean_pos == 2 and result.mean_neg == 5.5
    ref = stats.ttest_ind(neg, pos)  # the paper's repository: scipy's default, equal variances
    assert result.t == pytest.approx(ref.statistic) and result.p == pytest.approx(ref.pvalue)


def test_welch_t_as_scipy_and_the_sign_convention():
    pos, neg = [0.1, 0.2, 0.15, 0.3], [0.5, 0.9, 0.4, 0.8, 0.7, 0.6]
    welch = t_test(pos, neg, equal_var=False)
    ref = stats.ttest_ind(neg, pos, equal_var=False)
    assert welch.t == pytest.approx(ref.statistic) and welch.p == pytest.approx(ref.pvalue)
    assert welch.df == pytest.approx(ref.df)
    assert welch.t > 0 and t_test(neg, pos).t < 0  # positive when the positives are closer


def test_t_test_degenerate_inputs():
    with pytest.raises(InputError, match="two or more distances on each side"):
        t_test([0.1], [0.2, 0.3])
    apart = t_test([0.1, 0.1], [0.5, 0.5])
    assert apart.t == math.inf and apart.p == 0.0
    assert math.isnan(t_test([0.1, 0.1], [0.1, 0.1]).t)


def test_pearson_by_hand_and_as_scipy():
    x, y = [1, 2, 3, 4], [2, 1, 4, 3]
    # dx = -1.5 -.5 .5 1.5, dy = -.5 -1.5 1.5 .5: sum dx*dy = 4 * 0.75 = 3, sum dx^2 = sum dy^2 = 5 -> r = 0.6
    result = pearson(x, y)
    assert result.r == pytest.approx(0.6) and result.n == 4
    t = 0.6 * math.sqrt(2 / (1 - 0.36))
    assert result.p == pytest.approx(2 * stats.t.sf(t, 2))
    assert result.p == pytest.approx(0.4, abs=1e-9)  # with n = 4, r is uniform on [-1, 1] under the null: p = 1 - |r|
    ref = stats.pearsonr([0.3, 1.2, 2.2, 2.9, 4.1, 5.5], [1.0, 0.8, 2.5, 2.0, 3.9, 4.4])
    mine = pearson([0.3, 1.2, 2.2, 2.9, 4.1, 5.5], [1.0, 0.8, 2.5, 2.0, 3.9, 4.4])
    assert mine.r == pytest.approx(ref.statistic) and mine.p == pytest.approx(ref.pvalue)


def test_pearson_edge_cases():
    assert pearson([1, 2, 3], [3, 2, 1]).r == -1.0 and pearson([1, 2, 3], [3, 2, 1]).p == 0.0
    assert math.isnan(pearson([1, 1, 1], [1, 2, 3]).r)
    with pytest.raises(InputError, match="three pairs or more"):
        pearson([1, 2], [1, 2])


def test_bootstrap_interval_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(1)
    values = rng.normal(0.6, 0.1, 200)
    one = bootstrap_interval(np.mean, [values], n_boot=300, seed=3)
    assert one == bootstrap_interval(np.mean, [values], n_boot=300, seed=3)
    assert one != bootstrap_interval(np.mean, [values], n_boot=300, seed=4)
    assert one.low < one.estimate < one.high and one.estimate == pytest.approx(values.mean())
    # the interval of a mean is about +-1.96 standard errors wide
    assert one.high - one.low == pytest.approx(2 * 1.96 * values.std(ddof=1) / math.sqrt(200), rel=0.25)


def test_bootstrap_paired_and_two_sample():
    x = np.arange(50, dtype=float)
    y = 2 * x + np.sin(x)
    paired = bootstrap_interval(lambda a, b: pearson(a, b).r, [x, y], n_boot=200, paired=True)
    assert paired.low > 0.99  # pairs stay together: r stays near 1
    unpaired = bootstrap_interval(lambda a, b: pearson(a, b).r, [x, y], n_boot=200, paired=False)
    assert unpaired.low < 0.5  # shuffled partners destroy the correlation
    t = bootstrap_interval(lambda a, b: t_test(a, b).t, [[0.1, 0.2, 0.3, 0.25], [0.6, 0.7, 0.5, 0.65, 0.8]],
                           n_boot=200)
    assert t.low > 0 and t.low < t.estimate < t.high
    with pytest.raises(InputError, match="paired samples must have one length"):
        bootstrap_interval(np.mean, [[1, 2], [1, 2, 3]], paired=True)
