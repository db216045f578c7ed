"""Character-level BLEU, the glueCode metric of the method-naming task (paper appendix B.3).

BLEU (Papineni et al. 2002) over characters instead of words (Denoual & Lepage 2005): clipped n-gram
precisions for n = 1..4 with uniform weights 1/4, their geometric mean, times the brevity penalty
``exp(1 - r/c)`` when the prediction (``c`` characters) is shorter than the reference (``r``), else 1. Zero
precisions are smoothed with Chen & Cherry (2014) method 1: a precision whose numerator is 0 becomes
``epsilon / denominator`` with ``epsilon = 0.1``. The denominator of order ``n`` is the number of the
prediction's n-grams, at least 1 (so a 3-character prediction has a smoothed 4-gram precision of 0.1).

Implemented here (no nltk dependency) to match NLTK's ``sentence_bleu(
[list(reference)], list(prediction), smoothing_function=SmoothingFunction().method1)``, which the paper's
reference implementation used, including its edge cases: a prediction sharing no character with the reference
scores 0 (smoothing is not applied then), an empty prediction scores 0, and an exact match of fewer than 4
characters scores below 1 (its missing 4-grams are smoothed to 0.1: "abc" against "abc" gives 0.1 ** (1/4)); the
builder leaves out names shorter than 4 characters, so exact matches of the task's names score 1. Characters are taken as given (no
case folding, no stripping); the evaluator decides how a model's output becomes a name.

:func:`mean_char_bleu` is the task score: the average of the per-item scores (the paper reports the mean of
sentence-level scores, not NLTK's ``corpus_bleu``, which pools the counts).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from asc.errors import InputError

__all__ = ["EPSILON", "MAX_ORDER", "char_bleu", "mean_char_bleu", "ngram_precisions"]

MAX_ORDER = 4  # n-grams of 1 to 4 characters, uniform weights
EPSILON = 0.1  # Chen & Cherry (2014) smoothing method 1


def _ngrams(text: str, n: int) -> Counter[str]:
    return Counter(text[i:i + n] for i in range(len(text) - n + 1))


def ngram_precisions(prediction: str, reference: str) -> list[tuple[int, int]]:
    """Clipped character n-gram matches and the prediction's n-gram count (at least 1), for n = 1..4:
    ``[(numerator, denominator), ...]`` before smoothing."""
    out = []
    for n in range(1, MAX_ORDER + 1):
        pred, ref = _ngrams(prediction, n), _ngrams(reference, n)
        matched = sum(min(count, ref[gram]) for gram, count in pred.items())
        out.append((matched, max(1, sum(pred.values()))))
    return out


def char_bleu(prediction: str, reference: str) -> float:
    """Character-level BLEU-4 of ``prediction`` against one ``reference``, smoothed (Chen & Cherry method 1).

    1.0 for an exact match of at least 4 characters, 0.0 for an empty prediction or one sharing no character with
    the reference."""
    if not reference:
        raise InputError("char_bleu: the reference (the true name) is empty; give the masked name as reference")
    if not prediction:
        return 0.0
    precisions = ngram_precisions(prediction, reference)
    if precisions[0][0] == 0:  # no character in common (NLTK returns 0 before smoothing)
        return 0.0
    log_sum = math.fsum(math.log((num if num else EPSILON) / den) / MAX_ORDER for num, den in precisions)
    c, r = len(prediction), len(reference)
    brevity = 1.0 if c > r else math.exp(1 - r / c)
    return brevity * math.exp(log_sum)


def mean_char_bleu(predictions: Sequence[str], references: Sequence[str]) -> float:
    """The naming task's score: the mean of :func:`char_bleu` over paired predictions and references."""
    if len(predictions) != len(references):
        raise InputError(f"mean_char_bleu: {len(predictions)} predictions for {len(references)} references; "
                         "give one prediction per item")
    if not references:
        raise InputError("mean_char_bleu: no items; give at least one prediction and reference")
    return math.fsum(char_bleu(p, r) for p, r in zip(predictions, references)) / len(references)
