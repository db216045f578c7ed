"""Next-token scores (NtP): p(token_i | tokens_<i) for every token, from batched forward passes.

For token i the prediction is read from the logits at position i-1 after a softmax over the
vocabulary (ASTxplainer section II; the authors' user-study demo took the softmax over the sequence
axis, a bug we do not copy). Per token we keep the probability, its log, the entropy (nats) of the
predicted distribution, the rank of the actual token (1 = the model's top choice) and the top-k
alternatives.

Tokens with no prediction are marked, never given a made-up value: position 0 when the tokenizer
adds no BOS token, and special tokens (BOS/EOS/padding). Their ``prob``/``logprob``/``entropy`` are
NaN and ``rank`` is 0.

Inputs longer than the window (the model's context, capped by ``max_window`` to bound memory) are
scored with overlapping windows of equal length: after the first window each new window starts
``stride = window // 2`` tokens later and scores only tokens not scored before, so every token keeps
at least ``window - stride`` tokens of left context.
"""

from __future__ import annotations

import logging
import math
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from asc.arch import predicted, vocab_size
from asc.device import is_oom, logit_budget, model_device
from asc.errors import InputError, ModelLoadError
from asc.models import ModelBundle
from asc.tokenstats import batch_stats, eager_stats, token_stats  # noqa: F401  (re-exported)
from asc.tokenstats import fused_stats as _fused_stats  # noqa: F401  (the name tests use)

__all__ = ["DEFAULT_MAX_WINDOW", "TOP_K", "TokenScores", "encode", "forward_batches", "micro_batches", "score_ids",
           "score_text", "score_texts", "token_stats", "vocab_text", "window_rows", "window_size", "batch_stats",
           "fill_scores", "vocab_array", "encode_with"]

TOP_K = 5
DEFAULT_MAX_WINDOW = 2048
log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TokenScores:
    """Scores for one token sequence; arrays have shape ``(T,)`` unless noted.

    ``start``/``end`` are character offsets into ``source`` (special tokens have ``start == end``).
    ``top_ids``/``top_probs`` have shape ``(T, TOP_K)``; rows of tokens with no prediction are -1/NaN.
    """

    source: str
    ids: np.ndarray  # int64
    start: np.ndarray  # int64
    end: np.ndarray  # int64
    special: np.ndarray  # bool
    prob: np.ndarray  # float64, NaN = no prediction
    logprob: np.ndarray  # float64
    entropy: np.ndarray  # float64, nats
    rank: np.ndarray  # int64, 1-based; 0 = no prediction
    top_ids: np.ndarray  # int64 (T, K)
    top_probs: np.ndarray  # float64 (T, K)
    top_text: tuple[tuple[str, ...], ...]  # decoded alternatives, (T, K)
    n_windows: int = 1

    @property
    def n_tokens(self) -> int:
        return len(self.ids)

    @property
    def has_prediction(self) -> np.ndarray:
        return ~np.isnan(self.prob)

    @property
    def loss(self) -> float:
        """Mean cross-entropy (nats/token) over tokens with a prediction; NaN if there are none."""
        lp = self.logprob[self.has_prediction]
        return float(-lp.mean()) if lp.size else math.nan

    @property
    def text(self) -> tuple[str, ...]:
        """Each token's text: the source slice it covers (split characters appear in both halves)."""
        return tuple(self.source[s:e] for s, e in zip(self.start.tolist(), self.end.tolist(), strict=False))


_VOCAB_TEXT: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def vocab_text(tokenizer: Any, size: int = 0) -> list[str]:
    """Every vocabulary id decoded on its own, computed once per tokenizer (for the top-k texts). ``size``: the
    model's own vocabulary size, when larger than the tokenizer's (embedding matrices padded to a multiple of 64
    or 128, as Qwen2.5's 151,936 rows for 151,665 tokens): the ids no token has read ``<id N>``."""
    table = _VOCAB_TEXT.get(tokenizer)
    if table is None:
        n = len(tokenizer)
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is not None:
            table = backend.decode_batch([[i] for i in range(n)], skip_special_tokens=False)
        else:
            table = [tokenizer.decode([i]) for i in range(n)]
        _VOCAB_TEXT[tokenizer] = table
    if size > len(table):
        table.extend(f"<id {i}>" for i in range(len(table), size))
    return table


def model_vocab(bundle: ModelBundle) -> int:
    """Rows of the model's output layer (its config's vocabulary size; multimodal configs: the text model's)."""
    return vocab_size(bundle.model)


def encode(bundle: ModelBundle, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Token ids of ``text`` with special tokens, and per token its character span and special flag:
    ``(ids, start, end, special)``, each of shape (T,). The one tokenization every score starts from."""
    return encode_with(bundle.tokenizer, text)


def encode_with(tokenizer: Any, text: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`encode` with the tokenizer alone (a worker process holds no model)."""
    enc = tokenizer(text, add_special_tokens=True, return_offsets_mapping=True,
                           return_special_tokens_mask=True, verbose=False)
    ids = np.asarray(enc["input_ids"], dtype=np.int64)
    offsets = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    special = np.asarray(enc["special_tokens_mask"], dtype=bool)
    return ids, offsets[:, 0], offsets[:, 1], special


def _plan_windows(n: int, window: int) -> list[tuple[int, int, int]]:
    """Windows as (begin, first scored position, end); positions 1..n-1 are each scored exactly once."""
    if n <= window:
        return [(0, 1, n)]
    stride = max(1, window // 2)
    plans = [(0, 1, window)]
    scored_to = window
    while scored_to < n:
        begin = min(plans[-1][0] + stride, n - window)
        plans.append((begin, scored_to, begin + window))
        scored_to = begin + window
    return plans


def _plan_batches(rows: list[tuple[np.ndarray, int]], budget_tokens: int) -> list[list[int]]:
    """Row numbers grouped into batches: rows sorted by length (longest first, so little padding), as many
    per batch as keep ``rows x longest`` within the token budget (at least one row)."""
    order = sorted(range(len(rows)), key=lambda r: -len(rows[r][0]))
    plans, i = [], 0
    while i < len(order):
        longest = len(rows[order[i]][0])
        take = max(1, min(len(order) - i, budget_tokens // max(1, longest)))
        plans.append(order[i : i + take])
        i += take
    return plans


def _pad(bundle: ModelBundle, rows: list[tuple[np.ndarray, int]], chunk: list[int], device):
    """``(input_ids, attention_mask)`` of the rows in ``chunk``, right-padded, on ``device``."""
    import torch

    pad = bundle.tokenizer.pad_token_id if bundle.tokenizer.pad_token_id is not None else 0
    longest = max(len(rows[r][0]) for r in chunk)
    ids = torch.full((len(chunk), longest), pad, dtype=torch.long)
    mask = torch.zeros((len(chunk), longest), dtype=torch.long)
    for j, r in enumerate(chunk):
        seq = rows[r][0]
        ids[j, : len(seq)] = torch.from_numpy(seq)
        mask[j, : len(seq)] = 1
    return ids.to(device), mask.to(device)


def micro_batches(bundle: ModelBundle, rows: list[tuple[np.ndarray, int]]) -> Iterator[tuple[list[int], Any, Any]]:
    """Yield ``(row numbers, input_ids, attention_mask)`` micro-batches under the device's token budget."""
    device = model_device(bundle.model)
    for chunk in _plan_batches(rows, _token_budget(bundle, device)):
        yield (chunk, *_pad(bundle, rows, chunk, device))


def _token_budget(bundle: ModelBundle, device) -> int:
    return max(1, logit_budget(device) // max(1, model_vocab(bundle) * 4))


def _forward_rows(bundle: ModelBundle, rows: list[tuple[np.ndarray, int]], k: int):
    """Run the model on rows of (ids, first scored position) and return per-row stats for positions
    first..len-1 (the prediction of token i comes from the logits at position i-1). Statistics are computed
    on the model's device and reach the host in one transfer per batch (:func:`batch_stats`); a batch that runs out
    of memory is halved and retried."""
    import torch

    device = model_device(bundle.model)
    budget = logit_budget(device)
    out: list = [None] * len(rows)
    todo = _plan_batches(rows, _token_budget(bundle, device))
    while todo:
        chunk = todo.pop(0)
        ids, mask = _pad(bundle, rows, chunk, device)
        try:
            with torch.inference_mode():
                logits = bundle.model(input_ids=ids, attention_mask=mask, use_cache=False).logits
                scored = [(j, r) for j, r in enumerate(chunk) if len(rows[r][0]) > rows[r][1]]
                got = zip([r for _, r in scored], batch_stats(
                    logits, ids, [(j, rows[r][1], len(rows[r][0])) for j, r in scored], k, budget), strict=True)
        except (RuntimeError, MemoryError) as err:
            if not is_oom(err):
                raise
            logits = None
            if device.type == "cuda":
                torch.cuda.empty_cache()
            if len(chunk) == 1:
                raise ModelLoadError(f"out of memory scoring one window of {len(rows[chunk[0]][0])} tokens on "
                                     f"{device}: use a shorter --max-window, --dtype bfloat16 or another device") from err
            half = len(chunk) // 2
            log.info("out of memory on a batch of %d rows; retrying as %d + %d", len(chunk), half, len(chunk) - half)
            todo[:0] = [chunk[:half], chunk[half:]]
            continue
        for r, stats in got:
            out[r] = stats
        del logits
    return out


def score_ids(bundle: ModelBundle, source: str, ids: Sequence[int] | np.ndarray, start: Sequence[int] | np.ndarray,
              end: Sequence[int] | np.ndarray, special: Sequence[bool] | np.ndarray | None = None, *,
              max_window: int | None = None) -> TokenScores:
    """Score an exact id sequence (e.g. generated tokens) whose character offsets into ``source`` are known."""
    bundle.require_causal()
    ids = np.asarray(ids, dtype=np.int64)
    if special is None:
        special = np.isin(ids, np.asarray(bundle.tokenizer.all_special_ids, dtype=np.int64))
    return _score_many(bundle, [(source, ids, np.asarray(start, np.int64), np.asarray(end, np.int64),
                                 np.asarray(special, bool))], max_window)[0]


def score_text(bundle: ModelBundle, source: str, *, max_window: int | None = None) -> TokenScores:
    """Tokenize ``source`` (with the tokenizer's own special tokens) and score every token."""
    return score_texts(bundle, [source], max_window=max_window)[0]


def score_texts(bundle: ModelBundle, sources: Sequence[str], *, max_window: int | None = None) -> list[TokenScores]:
    """Score several snippets in batched forward passes (padding to the longest in each micro-batch)."""
    bundle.require_causal()
    items = []
    for src in sources:
        if not isinstance(src, str):
            raise InputError("source must be text (str); decode bytes as UTF-8 first")
        items.append((src, *encode(bundle, src)))
    return _score_many(bundle, items, max_window)


def forward_batches(bundle: ModelBundle, sources: Sequence[str], *,
                    max_window: int | None = None) -> list[tuple[Any, Any]]:
    """The padded micro-batches ``(input_ids, attention_mask)``, on the model's device, that :func:`score_texts`
    feeds the model for ``sources``: the same tokenization, the same windows (the context capped by
    ``max_window``, default :data:`DEFAULT_MAX_WINDOW`) and the same batches by token budget. For benchmarks
    that time the bare forward passes on exactly the inputs the pipeline scores (``make bench``)."""
    rows, _ = window_rows([encode(bundle, src)[0] for src in sources], window_size(bundle, max_window))
    return [(ids, mask) for _, ids, mask in micro_batches(bundle, rows)]


def window_size(bundle: ModelBundle, max_window: int | None) -> int:
    """Tokens per window: the model's context capped by ``max_window`` (default :data:`DEFAULT_MAX_WINDOW`)."""
    window = min(bundle.context_length, max_window or DEFAULT_MAX_WINDOW)
    if window < 2:
        raise InputError(f"window of {window} tokens is too short to score anything")
    return window


def window_rows(id_seqs: Sequence[np.ndarray], window: int) -> tuple[list[tuple[np.ndarray, int]], list[list]]:
    """The rows ``(window ids, first scored position in the window)`` of every sequence, and each sequence's
    windows as :func:`_plan_windows` gives them (none for sequences of fewer than two tokens)."""
    rows = []
    plans_per_item = []
    for ids in id_seqs:
        plans = _plan_windows(len(ids), window) if len(ids) > 1 else []
        plans_per_item.append(plans)
        for begin, first, end in plans:
            rows.append((ids[begin:end], first - begin))
    return rows, plans_per_item


def _score_many(bundle: ModelBundle, items, max_window: int | None) -> list[TokenScores]:
    window = window_size(bundle, max_window)
    k = min(TOP_K, len(bundle.tokenizer))
    rows, plans_per_item = window_rows([item[1] for item in items], window)
    with bundle.lock:
        stats = _forward_rows(bundle, rows, k) if rows else []
    return fill_scores(items, plans_per_item, stats, k, vocab_array(bundle.tokenizer, model_vocab(bundle)))


_VOCAB_ARRAY: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def vocab_array(tokenizer: Any, size: int = 0) -> np.ndarray:
    """:func:`vocab_text` as a numpy array of Python strings (for picking the top-k texts of every token at once),
    made once per tokenizer and size."""
    table = vocab_text(tokenizer, size)
    known = _VOCAB_ARRAY.get(tokenizer)
    if known is None or len(known) != len(table):
        known = np.empty(len(table), dtype=object)
        known[:] = table
        _VOCAB_ARRAY[tokenizer] = known
    return known


def fill_scores(items: Sequence[tuple[str, np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
                plans_per_item: Sequence[list], stats: Sequence[Any], k: int, texts: np.ndarray) -> list[TokenScores]:
    """The :class:`TokenScores` of ``items`` (``(source, ids, start, end, special)``) from the statistics of their
    window rows (``stats``, in :func:`window_rows` order; None for a row with nothing scored) and the vocabulary's
    texts (:func:`vocab_array`). Model-free: a worker process may build them."""
    results: list[TokenScores] = []
    row = 0
    for (src, ids, start, end, special), plans in zip(items, plans_per_item, strict=False):
        n = len(ids)
        logprob = np.full(n, np.nan)
        entropy = np.full(n, np.nan)
        rank = np.zeros(n, dtype=np.int64)
        top_ids = np.full((n, k), -1, dtype=np.int64)
        top_probs = np.full((n, k), np.nan)
        for _begin, first, end_ in plans:
            got = stats[row]
            row += 1
            if got is None:
                continue
            lp, ent, rk, ti, tp = got
            logprob[first:end_], entropy[first:end_], rank[first:end_] = lp, ent, rk
            top_ids[first:end_], top_probs[first:end_] = ti, tp
        no_pred = ~predicted(special)
        logprob[no_pred], entropy[no_pred], rank[no_pred] = np.nan, np.nan, 0
        top_ids[no_pred], top_probs[no_pred] = -1, np.nan
        results.append(TokenScores(source=src, ids=ids, start=start, end=end, special=special,
                                   prob=np.exp(logprob), logprob=logprob, entropy=entropy, rank=rank,
                                   top_ids=top_ids, top_probs=top_probs, top_text=_top_text(top_ids, texts),
                                   n_windows=max(1, len(plans))))
    return results


def _top_text(top_ids: np.ndarray, texts: np.ndarray) -> tuple[tuple[str, ...], ...]:
    """Per token, the texts of its top-k ids (ids -1 left out), picked from ``texts`` for every token at once."""
    picked = texts[np.maximum(top_ids, 0)].tolist()
    for i in np.flatnonzero((top_ids < 0).any(1)).tolist():
        picked[i] = [texts[t] for t in top_ids[i].tolist() if t >= 0]
    return tuple(map(tuple, picked))
