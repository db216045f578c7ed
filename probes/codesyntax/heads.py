"""CodeSyntax-style attention-head scores: does one head link the words of a syntactic relation?

Pure numpy (and pandas for tables); no torch/transformers import. Samples and edges come from
:mod:`probes.codesyntax.relations` (``Sample.relns[name]`` = edges ``(head, dep_first, dep_last)`` over WORD
tokens, ``head < dep_first <= dep_last``). Method: CodeSyntax (Shen et al.,
"Benchmarking Language Models for Code Syntax Understanding", EMNLP 2022), with the deviations stated below.

Word-level attention (:func:`word_attention`)
---------------------------------------------
``attn`` is ``(layers, heads, n_sub, n_sub)``, rows = attention FROM a sub-token, columns = TO.
Attention TO a word is the SUM over its sub-token columns, attention FROM a word the MEAN over its
sub-token rows; sub-tokens mapped to -1 (special tokens, tokens in no word) are dropped, words
without a sub-token get zero rows and columns, and the diagonal (a word attending to itself) is 0.

Ranking and metrics (:class:`HeadScorer`)
-----------------------------------------
In a row, words are ranked by attention, highest first; ties go to the LOWER word index (a stable
argsort of the negated row). ``rank = #(entries strictly greater) + #(equal entries with a lower
index)``; the target is in the top-k iff ``rank < k``. The row's own entry counts as 0 whatever the
array holds. A row of zeros (a word without sub-tokens) ranks words by index.

- Encoders (``causal=False``, as in the paper): rank by the head word's row. ``first``: dep_first
  in the top-k; ``last``: dep_last in the top-k; ``any``: some word of dep_first..dep_last is.
- Decoders (``causal=True``): a causal model's head word (earlier) cannot attend to its dependent
  (later), so an edge is read backwards, from the dependent's row to the head: ``first``: the head
  is in the top-k of dep_first's row; ``last``: of dep_last's row; ``any``: of SOME row in
  dep_first..dep_last.

Per (relation, metric, k, layer, head) the scorer counts hits, per relation the edges, separately
for the ``"val"`` and ``"test"`` splits; duplicated edges count twice (the authors kept them).
:meth:`HeadScores.best_heads` picks each relation's best head on VAL (ties: lowest layer, then
head) and reports its TEST score; :meth:`HeadScores.model_score` is the unweighted mean of those
test scores over relations. The authors picked the best head on the same data they reported, which
flatters models with many heads; :func:`split_samples` gives a seeded val/test split of samples.

Baselines (:func:`baseline_scores`)
-----------------------------------
On the same edges and splits. Predictors: an offset ``o`` in 1..max_offset (encoder: word
``head + o`` is predicted as the dependent; causal: from the dependent's row word, ``-o`` back is
predicted as the head, which hits exactly when ``head + o`` hits, so offsets score the same both
ways), and a keyword ``w`` of ``keyword.kwlist`` (encoder: the next ``w`` token after the head;
causal: the previous ``w`` before the row word; for ``any`` that is equivalent to ``first``, since
the previous ``w`` before a later row can only be the head if it is already the one before
dep_first). A predictor hits an edge as heads do. Top-k: k predictors chosen greedily on VAL by
marginal gain (ties: smaller offset first, keywords alphabetically), scored on TEST (an edge is
hit if any chosen predictor hits it). ``offset`` and ``keyword`` are the two pools alone;
``combined`` is their per-relation max of TEST scores (the authors' combination:
note the max is taken on test); ``joint`` is one greedy over both pools (ties: offsets first).
"""

from __future__ import annotations

import keyword
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from asc.errors import InputError
from probes.codesyntax.samples import RELATIONS, Sample

__all__ = [
    "KEYWORDS", "METRICS", "HEAD_SPLITS", "HeadScorer", "HeadScores", "baseline_scores", "split_samples",
    "word_attention",
]  # fmt: skip

METRICS: tuple[str, ...] = ("first", "last", "any")
HEAD_SPLITS: tuple[str, ...] = ("val", "test")
#: The keyword baseline's predictors, alphabetical (ASCII: ``False``, ``None``, ``True`` first).
KEYWORDS: tuple[str, ...] = tuple(sorted(keyword.kwlist))

_CHUNK = 1 << 22  # elements of (layers, heads, rows, words) handled at once
_SORT_FROM = 8  # a row with more distinct targets than this is ranked by sorting, not by counting


def word_attention(attn: np.ndarray, sub_to_word: Sequence[int] | np.ndarray, n_words: int) -> np.ndarray:
    """``(layers, heads, n_sub, n_sub)`` sub-token attention -> ``(layers, heads, n_words, n_words)`` float32.

    TO a word: sum over its sub-token columns; FROM a word: mean over its sub-token rows; sub-tokens
    mapped to -1 are dropped; words without sub-tokens get zero rows/columns; the diagonal is 0.
    """
    a = np.asarray(attn)
    if a.ndim != 4 or a.shape[2] != a.shape[3]:
        raise ValueError(f"attn must be (layers, heads, n_sub, n_sub), got shape {a.shape}")
    idx = np.asarray(sub_to_word, dtype=np.int64).reshape(-1)
    if idx.shape[0] != a.shape[2]:
        raise ValueError(f"sub_to_word has {idx.shape[0]} entries for {a.shape[2]} sub-tokens")
    if idx.size and (idx.min() < -1 or idx.max() >= n_words):
        raise ValueError(f"sub_to_word must lie in -1..{n_words - 1}")
    out = np.zeros(a.shape[:2] + (n_words, n_words), dtype=np.float32)
    if (idx >= 0).any():
        # runs of equal word ids are summed in place (no copy of the big array); a word split over several
        # runs (non-contiguous sub-tokens) is summed over its runs afterwards, on the small array
        runs = np.flatnonzero(np.r_[True, idx[1:] != idx[:-1]])
        run_word = idx[runs]
        kept = np.flatnonzero(run_word >= 0)
        order = kept[np.argsort(run_word[kept], kind="stable")]
        words, word_start = np.unique(run_word[order], return_index=True)
        counts = np.bincount(idx[idx >= 0], minlength=n_words)[words].astype(np.float32)
        for layer in range(a.shape[0]):  # one layer at a time bounds the memory
            x = np.add.reduceat(a[layer], runs, axis=2, dtype=np.float32)[:, :, order]  # TO: sum over columns
            x = np.add.reduceat(x, runs, axis=1)[:, order, :]
            if len(words) != len(order):
                x = np.add.reduceat(np.add.reduceat(x, word_start, axis=2), word_start, axis=1)
            out[layer][:, words[:, None], words[None, :]] = x / counts[:, None]  # FROM: mean over rows
    diag = np.arange(n_words)
    out[:, :, diag, diag] = 0.0
    return out


def _count_ranks(wa: np.ndarray, rows: np.ndarray, tgts: np.ndarray) -> np.ndarray:
    """Rank of word ``tgts[p]`` in row ``rows[p]`` for every (layer, head): ``(layers, heads, P)`` int32."""
    n_l, n_h, _, n = wa.shape
    out = np.empty((n_l, n_h, rows.size), dtype=np.int32)
    step = max(1, _CHUNK // max(1, n_l * n_h * n))
    cols = np.arange(n)
    for a in range(0, rows.size, step):
        r, t = rows[a : a + step], tgts[a : a + step]
        i = np.arange(r.size)
        block = wa[:, :, r, :]  # (L, H, c, n), a copy
        block[:, :, i, r] = 0.0
        v = block[:, :, i, t][..., None]
        out[:, :, a : a + step] = (block > v).sum(-1) + ((block == v) & (cols < t[:, None])).sum(-1)
    return out


def _sort_ranks(wa: np.ndarray, rows: np.ndarray, pair_rows: np.ndarray, pair_tgts: np.ndarray) -> np.ndarray:
    """As :func:`_count_ranks` for pairs whose rows are all in ``rows`` (sorted, unique): each row sorted once."""
    n_l, n_h, _, n = wa.shape
    out = np.empty((n_l, n_h, pair_rows.size), dtype=np.int32)
    step = max(1, _CHUNK // max(1, n_l * n_h * n))
    positions = np.broadcast_to(np.arange(n, dtype=np.int32), (n_l, n_h, min(step, rows.size), n))
    for a in range(0, rows.size, step):
        r = rows[a : a + step]
        block = wa[:, :, r, :]
        block[:, :, np.arange(r.size), r] = 0.0
        order = np.argsort(-block, axis=-1, kind="stable")  # ties: lower index first
        ranks = np.empty(order.shape, dtype=np.int32)
        np.put_along_axis(ranks, order, positions[:, :, : r.size], axis=-1)
        mask = (pair_rows >= r[0]) & (pair_rows <= r[-1])
        local = np.searchsorted(r, pair_rows[mask])
        out[:, :, mask] = ranks[:, :, local, pair_tgts[mask]]
    return out


def _query_ranks(wa: np.ndarray, rows: np.ndarray, tgts: np.ndarray) -> np.ndarray:
    """Ranks for query pairs (duplicates computed once); rows with many targets are sorted, others counted."""
    n = wa.shape[-1]
    pairs, inverse = np.unique(rows * n + tgts, return_inverse=True)
    pr, pt = pairs // n, pairs % n
    uniq_rows, row_of_pair, n_targets = np.unique(pr, return_inverse=True, return_counts=True)
    dense = n_targets[row_of_pair] > _SORT_FROM
    out = np.empty(wa.shape[:2] + (pairs.size,), dtype=np.int32)
    if dense.any():
        out[:, :, dense] = _sort_ranks(wa, uniq_rows[n_targets > _SORT_FROM], pr[dense], pt[dense])
    if (~dense).any():
        out[:, :, ~dense] = _count_ranks(wa, pr[~dense], pt[~dense])
    return out[:, :, inverse.reshape(-1)]


def _sample_edges(sample: Sample, relations: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """All edges of ``relations`` in ``sample``, grouped by relation: ``(E, 3)`` int64 and relation index ``(E,)``."""
    chunks = [np.asarray(sample.relns.get(name, ()), dtype=np.int64).reshape(-1, 3) for name in relations]
    edges = np.concatenate(chunks) if chunks else np.zeros((0, 3), np.int64)
    rel = np.repeat(np.arange(len(relations)), [len(c) for c in chunks])
    n = len(sample.tokens)
    h, s, e = edges.T
    if edges.size and not ((h >= 0) & (h < s) & (s <= e) & (e < n)).all():
        raise ValueError(f"edges must satisfy 0 <= head < dep_first <= dep_last < {n} (the word count)")
    return edges, rel


def _check_ks(ks: Iterable[int]) -> tuple[int, ...]:
    ks = tuple(int(k) for k in ks)
    if not ks or min(ks) < 1 or len(set(ks)) != len(ks):
        raise InputError(f"ks must be distinct positive integers, got {ks}")
    return ks


@dataclass(frozen=True, eq=False)
class HeadScores:
    """Hit and edge counts of every head; ``hits[split]`` is ``(relations, 3 metrics, ks, layers, heads)``."""

    relations: tuple[str, ...]
    ks: tuple[int, ...]
    causal: bool
    hits: dict[str, np.ndarray]
    edges: dict[str, np.ndarray]
    n_samples: dict[str, int] = field(default_factory=dict)

    def _index(self, metric: str, k: int) -> tuple[int, int]:
        if metric not in METRICS:
            raise InputError(f"metric must be one of {METRICS}, got {metric!r}")
        if k not in self.ks:
            raise InputError(f"k={k} was not scored (ks={self.ks})")
        return METRICS.index(metric), self.ks.index(k)

    def score(self, split: str) -> np.ndarray:
        """Hit rate ``(relations, 3, ks, layers, heads)`` float64; NaN for relations without edges."""
        if split not in HEAD_SPLITS:
            raise InputError(f"split must be one of {HEAD_SPLITS}, got {split!r}")
        n = self.edges[split].astype(np.float64)[:, None, None, None, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(n > 0, self.hits[split] / np.where(n > 0, n, 1.0), np.nan)

    def layer_head(self, relation: str, metric: str = "first", k: int = 1, split: str = "test") -> np.ndarray:
        """``(layers, heads)`` scores of one relation, for a heatmap (NaN when it has no edges)."""
        m, ki = self._index(metric, k)
        return self.score(split)[self.relations.index(relation), m, ki]

    def best_heads(self, metric: str = "first", k: int = 1, min_edges: int = 1) -> pd.DataFrame:
        """Per relation with >= ``min_edges`` edges in both splits: the best VAL head and its TEST score."""
        m, ki = self._index(metric, k)
        val, test = self.score("val")[:, m, ki], self.score("test")[:, m, ki]
        rows = []
        for r, name in enumerate(self.relations):
            n_val, n_test = int(self.edges["val"][r]), int(self.edges["test"][r])
            if n_val < max(1, min_edges) or n_test < max(1, min_edges):
                continue
            layer, head = np.unravel_index(int(np.argmax(val[r])), val[r].shape)  # first max: lowest layer, head
            rows.append({"relation": name, "n_val": n_val, "n_test": n_test, "layer": int(layer), "head": int(head),
                         "val_score": float(val[r, layer, head]), "test_score": float(test[r, layer, head])})
        columns = ["relation", "n_val", "n_test", "layer", "head", "val_score", "test_score"]
        return pd.DataFrame(rows, columns=columns)

    def model_score(self, metric: str = "first", k: int = 1, min_edges: int = 1) -> float:
        """Unweighted mean over relations of the best (val-chosen) head's test score; NaN if none qualifies."""
        best = self.best_heads(metric, k, min_edges)
        return float(best["test_score"].mean()) if len(best) else float("nan")


class HeadScorer:
    """Accumulates head hits over samples (``add``) without keeping their attention; ``result()`` freezes them."""

    def __init__(self, relations: Sequence[str] = RELATIONS, ks: Iterable[int] = tuple(range(1, 21)),
                 causal: bool = False):
        self.relations = tuple(relations)
        self.ks = _check_ks(ks)
        self.causal = bool(causal)
        self._hits: dict[str, np.ndarray] | None = None
        self._edges = {s: np.zeros(len(self.relations), np.int64) for s in HEAD_SPLITS}
        self._samples = dict.fromkeys(HEAD_SPLITS, 0)

    def add(self, sample: Sample, word_attn: np.ndarray, split: str) -> None:
        """Score every edge of ``sample`` on ``word_attn`` ``(layers, heads, n_words, n_words)``."""
        if split not in HEAD_SPLITS:
            raise InputError(f"split must be one of {HEAD_SPLITS}, got {split!r}")
        wa = np.asarray(word_attn)
        n = len(sample.tokens)
        if wa.ndim != 4 or wa.shape[2:] != (n, n):
            raise ValueError(f"word_attn must be (layers, heads, {n}, {n}) for {n} words, got {wa.shape}")
        if self._hits is None:
            shape = (len(self.relations), len(METRICS), len(self.ks)) + wa.shape[:2]
            self._hits = {s: np.zeros(shape, np.int64) for s in HEAD_SPLITS}
        elif self._hits[split].shape[3:] != wa.shape[:2]:
            raise ValueError(f"word_attn has {wa.shape[:2]} (layers, heads); earlier samples had "
                             f"{self._hits[split].shape[3:]}")
        edges, rel = _sample_edges(sample, self.relations)
        self._samples[split] += 1
        self._edges[split] += np.bincount(rel, minlength=len(self.relations))
        if not len(edges):
            return
        h, s, e = edges.T
        length = e - s + 1
        span = np.repeat(s - np.cumsum(length) + length, length) + np.arange(length.sum())  # s..e of every edge
        own = np.repeat(h, length)
        if self.causal:  # dependent rows -> head
            rows, tgts = np.concatenate([s, e, span]), np.concatenate([h, h, own])
        else:  # head row -> dependent
            rows, tgts = np.concatenate([h, h, own]), np.concatenate([s, e, span])
        starts = np.concatenate([np.arange(2 * len(edges)), 2 * len(edges) + np.cumsum(length) - length])
        ranks = _query_ranks(wa.astype(np.float32, copy=False), rows, tgts)
        best = np.minimum.reduceat(ranks, starts, axis=-1)  # (L, H, 3E): metric-major, then edge
        # (3E,) group -> (metric, relation) one-hot; counts stay exact in float32 (< 2**24 edges)
        group = np.repeat(np.arange(len(METRICS)), len(edges)) * len(self.relations) + np.tile(rel, len(METRICS))
        onehot = np.zeros((group.size, len(METRICS) * len(self.relations)), np.float32)
        onehot[np.arange(group.size), group] = 1.0
        n_l, n_h = wa.shape[:2]
        hits = self._hits[split]
        for ki, k in enumerate(self.ks):
            counts = (best < k).reshape(n_l * n_h, -1).astype(np.float32) @ onehot  # (L*H, 3R)
            exact = np.rint(counts).astype(np.int64).reshape(n_l, n_h, len(METRICS), len(self.relations))
            hits[:, :, ki] += exact.transpose(3, 2, 0, 1)

    def result(self) -> HeadScores:
        """The counts so far (copied). Raises ValueError before the first ``add``."""
        if self._hits is None:
            raise InputError("no sample was added")
        return HeadScores(self.relations, self.ks, self.causal, {s: a.copy() for s, a in self._hits.items()},
                          {s: a.copy() for s, a in self._edges.items()}, dict(self._samples))


def _baseline_hits(sample: Sample, relations: Sequence[str], causal: bool, max_offset: int):
    """Per metric, ``(E, max_offset + len(KEYWORDS))`` bool: which predictor hits which edge; plus relation ids."""
    edges, rel = _sample_edges(sample, relations)
    n = len(sample.tokens)
    h, s, e = (c[:, None] for c in edges.T)
    pred = h + np.arange(1, max_offset + 1)  # offsets: the same hits for encoders and causal models
    offset = {"first": pred == s, "last": pred == e, "any": (pred >= s) & (pred <= e)}
    kw_id = {w: i for i, w in enumerate(KEYWORDS)}
    ids = np.array([kw_id.get(t, -1) for t in sample.tokens], dtype=np.int64)
    is_kw = ids[None, :] == np.arange(len(KEYWORDS))[:, None]  # (W, n)
    pos = np.arange(n)
    if causal:  # previous occurrence before the row word: prev[w, i] = max j < i, else -1
        upto = np.maximum.accumulate(np.where(is_kw, pos, -1), axis=1)
        prev = np.concatenate([np.full((len(KEYWORDS), 1), -1), upto[:, :-1]], axis=1)
        first = prev[:, s[:, 0]].T == h
        kw = {"first": first, "last": prev[:, e[:, 0]].T == h, "any": first}
    else:  # next occurrence after the head: next[w, i] = min j > i, else n
        since = np.minimum.accumulate(np.where(is_kw, pos, n)[:, ::-1], axis=1)[:, ::-1]
        nxt = np.concatenate([since[:, 1:], np.full((len(KEYWORDS), 1), n)], axis=1)
        p = nxt[:, h[:, 0]].T
        kw = {"first": p == s, "last": p == e, "any": (p >= s) & (p <= e)}
    return {m: np.concatenate([offset[m], kw[m]], axis=1) for m in METRICS}, rel


def _greedy(val: np.ndarray, test: np.ndarray, steps: int) -> tuple[list[int], list[float]]:
    """Greedy cover of the val edges (columns in tie order); the picks and the test hit rate after each."""
    picks: list[int] = []
    rates: list[float] = []
    left = val
    free = np.ones(val.shape[1], bool)
    covered = np.zeros(test.shape[0], bool)
    for _ in range(min(steps, val.shape[1])):
        gain = np.where(free, left.sum(0), -1)
        p = int(np.argmax(gain))  # first max: the tie order of the columns
        picks.append(p)
        free[p] = False
        left = left[~left[:, p]]
        covered |= test[:, p]
        rates.append(float(covered.mean()) if covered.size else float("nan"))
    return picks, rates


def baseline_scores(samples_with_split: Iterable[tuple[Sample, str]], relations: Sequence[str] = RELATIONS,
                    ks: Iterable[int] = range(1, 21), causal: bool = False, max_offset: int = 32) -> pd.DataFrame:
    """Offset / keyword baselines on the same edges (module docstring): one row per (relation, metric, k).

    Columns: relation, metric, k, offset, keyword, combined (max of the two), joint (one greedy over
    both pools), n_val, n_test, and the predictors picked by each greedy (``offset_picks`` like
    ``"+1 +3"``, ``keyword_picks``, ``joint_picks``). Scores are NaN for a relation without test edges.
    """
    relations, ks = tuple(relations), _check_ks(ks)
    if max_offset < 1:
        raise InputError("max_offset must be >= 1")
    parts: dict[str, dict[str, list[np.ndarray]]] = {sp: {m: [] for m in METRICS} for sp in HEAD_SPLITS}
    rels: dict[str, list[np.ndarray]] = {sp: [] for sp in HEAD_SPLITS}
    for sample, split in samples_with_split:
        if split not in HEAD_SPLITS:
            raise InputError(f"split must be one of {HEAD_SPLITS}, got {split!r}")
        hit, rel = _baseline_hits(sample, relations, causal, max_offset)
        rels[split].append(rel)
        for m in METRICS:
            parts[split][m].append(hit[m])
    n_pred = max_offset + len(KEYWORDS)
    rel_of = {sp: np.concatenate(rels[sp]) if rels[sp] else np.zeros(0, np.int64) for sp in HEAD_SPLITS}
    hits = {sp: {m: np.concatenate(parts[sp][m]) if parts[sp][m] else np.zeros((0, n_pred), bool) for m in METRICS}
            for sp in HEAD_SPLITS}
    names = [f"+{o}" for o in range(1, max_offset + 1)] + list(KEYWORDS)
    pools = {"offset": np.arange(max_offset), "keyword": np.arange(max_offset, n_pred), "joint": np.arange(n_pred)}
    steps = max(ks)
    rows = []
    for r, name in enumerate(relations):
        n_val, n_test = int((rel_of["val"] == r).sum()), int((rel_of["test"] == r).sum())
        for m in METRICS:
            val, test = hits["val"][m][rel_of["val"] == r], hits["test"][m][rel_of["test"] == r]
            res = {pool: _greedy(val[:, cols], test[:, cols], steps) for pool, cols in pools.items()}
            for k in ks:
                row: dict[str, Any] = {"relation": name, "metric": m, "k": k}
                for pool, (picks, rates) in res.items():
                    row[pool] = rates[min(k, len(rates)) - 1]
                    row[f"{pool}_picks"] = " ".join(names[pools[pool][p]] for p in picks[:k])
                row["combined"] = float(np.fmax(row["offset"], row["keyword"]))
                rows.append(row | {"n_val": n_val, "n_test": n_test})
    columns = ["relation", "metric", "k", "offset", "keyword", "combined", "joint", "n_val", "n_test",
               "offset_picks", "keyword_picks", "joint_picks"]
    return pd.DataFrame(rows, columns=columns)


def split_samples(n: int, val_fraction: float = 0.5, seed: int = 0) -> np.ndarray:
    """``(n,)`` array of ``"val"``/``"test"``: a seeded permutation, ``round(n * val_fraction)`` samples in val.

    The best head (and the baselines' predictors) are chosen on val and reported on test, unlike the
    authors, who picked and reported on the same samples.
    """
    if not 0.0 <= val_fraction <= 1.0:
        raise InputError(f"val_fraction must be in [0, 1], got {val_fraction}")
    labels = np.full(n, "test", dtype="<U4")
    labels[np.random.default_rng(seed).permutation(n)[: int(np.floor(n * val_fraction + 0.5))]] = "val"
    return labels
