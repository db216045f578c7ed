"""Fork points: the tokens where the model hesitates, counted per AST node and per syntax category.

A token is a **fork point** when the model's next-token distribution at its position (the one that
predicted it, as in :mod:`asc.scores`) is undecided by either of two measures (either one suffices):

``margin = p(first choice) - p(second choice) < max_margin`` (default 0.1)
    the two best continuations are nearly tied: taking the second instead of the first changes
    the model's belief by less than 10 points of probability, a coin flip between two programs.
    Read from ``TokenScores.top_probs[:, 0] - top_probs[:, 1]`` (both are model probabilities,
    whichever token the text actually holds).
``entropy > min_entropy`` (default 2.0 nats)
    the mass is spread: 2 nats is the entropy of about e^2 ~ 7.4 equally likely tokens, so even a
    leading first choice is one option among many (a fresh identifier, a literal, the start of a
    comment). Code tokens the model knows (keywords, closing brackets, indentation) sit far below
    1 nat; the default leaves them out while a name the model has to invent is in.

Tokens with no prediction (position 0 without BOS, special tokens) are never forks: their margin
and entropy are NaN. Rates are shares of tokens *with* a prediction, so they compare across
tokenizers the way AsC-Eval values do:

* :func:`node_fork_rate`: per node, the share of the tokens bound to it (``Explanation.alignment``,
  ancestors included) that are forks; NaN for nodes with no predicted token;
* :func:`category_fork_rate`: per category, pooled over the distinct tokens bound to any of the
  category's nodes (a token inside nested nodes of one category counts once), not a mean of node
  rates, so a category's rate is "the share of its tokens where the model hesitates".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from asc.errors import InputError
from asc.explain import Explanation
from asc.scores import TokenScores

__all__ = ["ForkPoints", "ForkSettings", "category_fork_rate", "fork_points", "most_uncertain", "node_fork_rate"]


@dataclass(frozen=True)
class ForkSettings:
    """When a token is a fork point (module doc: why these defaults)."""

    max_margin: float = 0.1  # p(first) - p(second) below this: a fork
    min_entropy: float = 2.0  # entropy (nats) above this: a fork

    def __post_init__(self) -> None:
        if not 0.0 <= self.max_margin <= 1.0 or math.isnan(self.max_margin):
            raise InputError(f"max_margin={self.max_margin} is not a probability margin: choose a value from 0 to 1")
        if not self.min_entropy >= 0.0:
            raise InputError(f"min_entropy={self.min_entropy} nats is below 0: choose 0 or more (default 2.0)")


@dataclass(frozen=True)
class ForkPoints:
    """Per token of one scored sequence, arrays of shape ``(T,)``.

    ``margin`` is p(first choice) - p(second choice) and ``entropy`` the predicted distribution's
    entropy in nats, both NaN where the token has no prediction; ``is_fork`` is False there.
    """

    margin: np.ndarray  # float64 (T,)
    entropy: np.ndarray  # float64 (T,)
    is_fork: np.ndarray  # bool (T,)
    settings: ForkSettings = field(default_factory=ForkSettings)

    @property
    def n_tokens(self) -> int:
        return len(self.is_fork)

    @property
    def indices(self) -> np.ndarray:
        """(F,) token indices of the fork points, in order."""
        return np.flatnonzero(self.is_fork)

    @property
    def rate(self) -> float:
        """Share of the tokens with a prediction that are forks (NaN when none has one)."""
        has = ~np.isnan(self.margin)
        return float(self.is_fork[has].mean()) if has.any() else math.nan


def fork_points(scores: TokenScores, settings: ForkSettings | None = None) -> ForkPoints:
    """The fork points of one scored sequence (module doc: the two criteria)."""
    settings = settings or ForkSettings()
    top = np.asarray(scores.top_probs, dtype=np.float64)
    n = scores.n_tokens
    if top.ndim != 2 or top.shape[0] != n:
        raise InputError(f"top_probs has shape {top.shape}, expected ({n}, K): score the tokens with asc.scores")
    first = top[:, 0] if top.shape[1] else np.full(n, np.nan)
    second = top[:, 1] if top.shape[1] > 1 else np.where(np.isnan(first), np.nan, 0.0)  # a 1-token vocabulary
    has = ~np.isnan(np.asarray(scores.prob, dtype=np.float64)) & ~np.isnan(first)
    margin = np.where(has, first - second, np.nan)
    entropy = np.where(has, np.asarray(scores.entropy, dtype=np.float64), np.nan)
    with np.errstate(invalid="ignore"):
        is_fork = has & ((margin < settings.max_margin) | (entropy > settings.min_entropy))
    return ForkPoints(margin=margin, entropy=entropy, is_fork=is_fork, settings=settings)


def _check(explanation: Explanation, forks: ForkPoints) -> None:
    if forks.n_tokens != explanation.scores.n_tokens:
        raise InputError(f"the fork points cover {forks.n_tokens} tokens but the explanation has "
                         f"{explanation.scores.n_tokens}: compute them from this explanation's scores")


def node_fork_rate(explanation: Explanation, forks: ForkPoints) -> np.ndarray:
    """(N,) per node: the share of its bound tokens with a prediction that are forks; NaN where it has none."""
    _check(explanation, forks)
    al = explanation.alignment
    has = ~np.isnan(forks.margin)
    total = al.segment_sum(has)
    hits = al.segment_sum(forks.is_fork & has)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, hits / total, np.nan)


def category_fork_rate(explanation: Explanation, forks: ForkPoints) -> dict[str, float]:
    """Per category of the explanation's mapping, the share of forks among the distinct tokens with a prediction
    bound to its nodes (pooled, module doc); NaN for a category absent from the snippet or without predictions."""
    _check(explanation, forks)
    al = explanation.alignment
    node_cat = np.array(explanation.node_category, dtype=object)
    categories = explanation.categories or tuple(sorted({c for c in explanation.node_category if c}))
    has = ~np.isnan(forks.margin)
    out: dict[str, float] = {}
    for cat in categories:
        toks = al.covered_tokens(node_cat == cat, forks.n_tokens) & has
        out[cat] = float(forks.is_fork[toks].mean()) if toks.any() else math.nan
    return out


def most_uncertain(forks: ForkPoints, n: int, *, first: int = 0) -> np.ndarray:
    """Token indices of the ``n`` fork points (at index ``first`` or later) with the smallest margin, most
    uncertain first; equal margins go to the higher entropy, then the earlier token. Fewer when there are fewer."""
    if n < 0:
        raise InputError(f"n={n}: ask for 0 or more fork points")
    idx = forks.indices
    idx = idx[idx >= first]
    order = np.lexsort((idx, -forks.entropy[idx], forks.margin[idx]))  # last key sorts first
    return idx[order][:n].astype(np.int64)
