"""Next-token statistics on the model's device, and their way to the host: one transfer per batch.

Per predicted position: ``log p(target)``, the entropy (nats) of the predicted distribution, the rank of the
target (1 = the model's top choice) and the top-k ids with their probabilities (what :mod:`asc.scores` keeps per
token). :func:`token_stats` computes them for one sequence's rows of logits (the fused kernel of :mod:`asc.kernels`
on CUDA, else :func:`eager_stats`); :func:`batch_stats` for every sequence of a forward pass at once, the results
of the whole batch packed into one float64 tensor that reaches the host in one copy (the function-by-function path
made five small device-to-host copies per sequence). On the CPU the values are bit for bit those of the
per-sequence calls (:func:`batch_stats` says why it keeps those calls there), taken :data:`CPU_ROWS` rows at a time
so that the passes over the vocabulary read the cache, not memory.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["CPU_ROWS", "batch_stats", "eager_stats", "fused_stats", "token_stats"]

#: Rows of logits :func:`eager_stats` takes at once on the CPU: 16 rows of a 49,152-token vocabulary in float32 are
#: 3 MB, which stay in a core's L2 cache through the half-dozen passes of :func:`_stats`, where a whole batch's rows
#: went to memory and back on each pass (the statistics took half the time at 16 rows in a microbenchmark on this
#: 2-core machine; `make bench`'s pipeline overhead measures the effect). A row's values do not depend on it: each
#: reduction runs along one row either way.
CPU_ROWS = 16


def _stats(logits, targets, k: int):
    """Per-row NtP statistics from fp32 logits (n, V) and target ids (n,).

    Consumes ``logits`` (shifted in place): a handful of passes over the
    vocabulary and a single (n, V) temporary, which keeps scoring near the cost of the forward pass
    (`make bench`). Returns logprob, entropy (nats), rank (1 = top choice), top-k ids, top-k probs.
    """
    import torch

    tgt = logits.gather(1, targets[:, None])
    top_v, top_i = logits.topk(k, dim=-1)
    # rank: read from the top-k when the target is there (most code tokens), else count a full row
    hit = top_i == targets[:, None]
    in_top = hit.any(-1)
    rank = (hit.int().argmax(-1) + 1).int()
    far = (~in_top).nonzero()[:, 0]
    if len(far):
        rank[far] = (logits[far] > tgt[far]).sum(-1, dtype=torch.int32) + 1
    peak = logits.amax(-1, keepdim=True)
    shifted = logits.sub_(peak)
    expo = shifted.exp()
    total = expo.sum(-1, keepdim=True)
    # H = log Z - sum(e * x) / Z over shifted logits x, Z = sum(e); nansum: 0 * -inf (masked vocab) is 0
    entropy = total.log()[:, 0] - torch.nansum(expo.mul_(shifted), -1) / total[:, 0]
    lse = peak + total.log()
    return (tgt - lse)[:, 0], entropy, rank, top_i, torch.exp(top_v - lse)


def token_stats(logits: Any, targets: Any, k: int, budget: int) -> list[np.ndarray]:
    """Next-token statistics of the (n, V) logits (any dtype, on the model's device) for ``targets`` (n,): on CUDA
    the one-pass kernel of :mod:`asc.kernels`, elsewhere (or if it fails) :func:`eager_stats`. Only per-token
    results move to the CPU, as numpy arrays (logprob, entropy, rank, top-k ids, top-k probs)."""
    from asc import kernels

    if k == kernels.TOP and kernels.available(logits):
        try:
            return fused_stats(logits, targets)
        except Exception as err:  # a kernel that fails to compile or launch: the eager path, for good
            kernels.disable(err)
    return eager_stats(logits, targets, k, budget)


def eager_stats(logits: Any, targets: Any, k: int, budget: int) -> list[np.ndarray]:
    """:func:`token_stats` in plain torch on any device: row chunks converted to float32 under ``budget`` bytes."""
    return [t.cpu().numpy() for t in _eager_tensors(logits, targets, k, budget)]


def _eager_tensors(logits: Any, targets: Any, k: int, budget: int) -> list[Any]:
    """:func:`eager_stats` left on the logits' device as torch tensors."""
    import torch

    n, vocab = logits.shape
    rows = max(1, budget // max(1, 3 * vocab * 4))
    if logits.device.type == "cpu":  # rows that stay in a core's cache through _stats's passes (module doc)
        rows = min(rows, CPU_ROWS)
    parts = []
    for i in range(0, n, rows):
        parts.append(_stats(logits[i : i + rows].float(), targets[i : i + rows], k))
    return [torch.cat([p[j] for p in parts]) for j in range(5)]


def fused_stats(logits: Any, targets: Any) -> list[np.ndarray]:
    """:func:`token_stats` by the one-pass kernel of :mod:`asc.kernels` (the logits read once, as they are, with
    no float32 copy); the same five arrays as the eager path."""
    from asc.kernels import row_stats

    return [t.cpu().numpy() for t in row_stats(logits, targets)]


def batch_stats(logits: Any, ids: Any, spans: Sequence[tuple[int, int, int]], k: int, budget: int) -> list[list[np.ndarray]]:
    """:func:`token_stats` of several rows of one batch's logits (B, L, V): ``spans`` holds ``(row, first, end)``
    per sequence, whose tokens ``first..end-1`` are scored (from the logits at ``first-1..end-2``). The statistics
    of the whole batch reach the host in one transfer (float64, which holds every float32 and id exactly), then
    split per sequence: the five arrays of :func:`token_stats`, as float64 and int64.

    On CUDA with the fused kernel every row of the batch goes through one launch; elsewhere each sequence's rows
    go through :func:`_eager_tensors` on their own, the calls the function-by-function path made (so the values
    are those bits exactly: a torch reduction over one row may split the vocabulary over threads, over several
    rows it does not)."""
    import torch

    from asc import kernels

    if not spans:
        return []
    parts: list[Any] = []
    if k == kernels.TOP and kernels.available(logits):
        try:
            width = logits.shape[1]
            index = torch.cat([torch.arange(first - 1, end - 1) + row * width for row, first, end in spans])
            index = index.to(logits.device)
            flat = logits.reshape(-1, logits.shape[-1])
            parts = list(kernels.row_stats(flat.index_select(0, index), ids.reshape(-1).index_select(0, index + 1)))
        except Exception as err:  # as in token_stats: the eager path, for good
            kernels.disable(err)
            parts = []
    if not parts:
        per = [_eager_tensors(logits[row, first - 1 : end - 1], ids[row, first:end], k, budget)
               for row, first, end in spans]
        parts = [torch.cat([p[j] for p in per]) for j in range(5)]
    packed = torch.cat([parts[0][:, None].double(), parts[1][:, None].double(), parts[2][:, None].double(),
                        parts[3].double(), parts[4].double()], dim=1).cpu().numpy()  # the one transfer
    out, at = [], 0
    for _row, first, end in spans:
        block = packed[at : at + end - first]
        at += end - first
        out.append([block[:, 0], block[:, 1], block[:, 2].astype(np.int64), block[:, 3 : 3 + k].astype(np.int64),
                    block[:, 3 + k :]])
    return out
