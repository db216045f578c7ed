"""Character-level BLEU with Chen & Cherry smoothing 1 (probes.gluecode.bleu), against values worked out by hand."""

import math

import pytest

from asc.errors import InputError
from probes.gluecode.bleu import EPSILON, char_bleu, mean_char_bleu, ngram_precisions


def test_exact_match_scores_one():
    assert char_bleu("sort_list", "sort_list") == pytest.approx(1.0)
    assert char_bleu("getName", "getName") == pytest.approx(1.0)


def test_empty_prediction_and_no_shared_character_score_zero():
    assert char_bleu("", "sort_list") == 0.0
    assert char_bleu("xyz", "abc") == 0.0  # no unigram in common: 0, smoothing is not applied (as NLTK)


def test_shorter_prediction_all_ngrams_match_only_brevity_penalty():
    # "sort_list" (c=9) against "sort_lists" (r=10): every 1..4-gram of the prediction is in the reference,
    # precisions 9/9, 8/8, 7/7, 6/6; brevity penalty exp(1 - 10/9)
    assert ngram_precisions("sort_list", "sort_lists") == [(9, 9), (8, 8), (7, 7), (6, 6)]
    assert char_bleu("sort_list", "sort_lists") == pytest.approx(math.exp(-1 / 9))
    assert char_bleu("sort_list", "sort_lists") == pytest.approx(0.894839, abs=1e-6)


def test_longer_prediction_clipped_precisions_no_penalty():
    # "sort_lists" (10) against "sort_list" (9): 1-grams: 's' occurs 3 times, the reference has 2 -> 9/10;
    # 2-grams 8/9 ("ts" unmatched), 3-grams 7/8 ("sts"), 4-grams 6/7 ("ists"); c > r: no penalty;
    # the geometric mean telescopes to (6/10) ** (1/4)
    assert ngram_precisions("sort_lists", "sort_list") == [(9, 10), (8, 9), (7, 8), (6, 7)]
    assert char_bleu("sort_lists", "sort_list") == pytest.approx(0.6 ** 0.25)


def test_smoothing_method_one_on_zero_precisions():
    # "abc" against "abd": 1-grams a, b match (2/3); 2-grams ab matches, bc does not (1/2); the 3-gram abc
    # does not match (0/1 -> 0.1/1); there is no 4-gram (0 of at least 1 -> 0.1/1); equal lengths: no penalty
    assert ngram_precisions("abc", "abd") == [(2, 3), (1, 2), (0, 1), (0, 1)]
    expected = (2 / 3 * 1 / 2 * EPSILON * EPSILON) ** 0.25
    assert expected == pytest.approx(0.240281, abs=1e-6)
    assert char_bleu("abc", "abd") == pytest.approx(expected)


def test_short_exact_match_is_below_one_as_in_nltk():
    # three characters have no 4-gram: its precision is smoothed to 0.1
    assert char_bleu("abc", "abc") == pytest.approx(EPSILON ** 0.25)


def test_close_names_rank_above_distant_ones():
    ref = "compute_total"
    assert char_bleu("compute_sum", ref) > char_bleu("get_value", ref) > 0
    assert char_bleu("compute_totals", ref) > char_bleu("compute_sum", ref)


def test_mean_is_the_average_of_item_scores():
    preds, refs = ["sort_list", "", "abc"], ["sort_lists", "x", "abd"]
    assert mean_char_bleu(preds, refs) == pytest.approx((math.exp(-1 / 9) + 0 + char_bleu("abc", "abd")) / 3)


def test_errors_name_the_fix():
    with pytest.raises(InputError, match="reference"):
        char_bleu("abc", "")
    with pytest.raises(InputError, match="one prediction per item"):
        mean_char_bleu(["a"], ["a", "b"])
    with pytest.raises(InputError, match="at least one"):
        mean_char_bleu([], [])


def test_matches_nltk_when_installed():
    bleu_score = pytest.importorskip("nltk.translate.bleu_score")
    smooth = bleu_score.SmoothingFunction().method1
    pairs = [("sort_list", "sort_lists"), ("sort_lists", "sort_list"), ("abc", "abd"), ("getName", "getName"),
             ("compute_sum", "compute_total"), ("xyz", "abc"), ("read", "reader"), ("parse_args", "parse_known")]
    for pred, ref in pairs:
        theirs = bleu_score.sentence_bleu([list(ref)], list(pred), smoothing_function=smooth)
        assert char_bleu(pred, ref) == pytest.approx(float(theirs)), (pred, ref)
