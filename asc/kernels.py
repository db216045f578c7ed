"""One-pass next-token statistics on CUDA: log-probability, entropy and rank of the actual token.

:func:`asc.scores.token_stats` needs, per predicted position, ``log p(target)``, the entropy of the
predicted distribution and the rank of the target over the whole vocabulary. The eager torch path
(:func:`asc.tokenstats._stats`) converts the logits to float32 and makes several passes over them plus
one temporary; at Gemma-3's 262k vocabulary it ran at 99k tokens/s on an H100 and ``torch.compile``
at 414k, while one read of the bfloat16 logits allows about 5.3M (measured on the project's H100, 2026-11-23).

:func:`row_stats` reads each row of logits once, in their own dtype, in a Triton kernel: per lane an
online maximum ``m``, sum of ``exp(x - m)``, sum of ``exp(x - m) * x`` (for the entropy
``H = logsumexp - E[x]``), the count of logits above the target's (rank = count + 1, ties not
counted, as in the eager path) and the lane's five largest values with their ids (an insertion
network of five compare-exchanges); lanes merge at the end, the row's top 5 taken from the lanes'
candidates. The first GPU report (an H200; ``git show 8c8e535:docs/gpu-report.md``) measured why the top 5
live in the kernel: at 262k, ``torch.topk`` alone ran at 473k rows/s and a two-stage ``torch.topk`` at 207k, while
the kernel without them read 3.5M rows/s.

The kernel runs only for CUDA tensors and only where Triton imports. Any other case, and a kernel
that fails to compile or launch (logged once, then the eager path for the rest of the process), use
the eager path, which the GPU tests (``pytest -m gpu``) compare it against. Triton's interpreter
(``TRITON_INTERPRET=1``) runs the same kernel on the CPU, which the unit tests use where Triton is
installed.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

BLOCK = 1024  # vocabulary entries per lane block: 8 per thread at 4 warps
TOP = 5  # the alternatives the kernel keeps (asc.scores.TOP_K); another k takes the eager path
_state = {"failed": False}


try:  # Triton comes with CUDA builds of torch; kernels are defined at module level so they can call each other
    import triton
    import triton.language as tl
except ImportError:  # CPU-only installs: the eager path
    triton = None

if triton is not None:
    @triton.jit
    def _insert(x, xi, v, i):
        """One compare-exchange of the per-lane top-5 insertion: keeps the larger in ``v``, passes the other on."""
        swap = x > v
        return tl.where(swap, x, v), tl.where(swap, xi, i), tl.where(swap, v, x), tl.where(swap, i, xi)

    @triton.jit
    def _row_stats(x_ptr, t_ptr, lp_ptr, ent_ptr, rank_ptr, top_i_ptr, top_p_ptr, stride, n_vocab: tl.constexpr,
                   BLOCK: tl.constexpr):
        row = tl.program_id(0)
        base = x_ptr + row.to(tl.int64) * stride
        target = tl.load(t_ptr + row)
        xt = tl.load(base + target).to(tl.float32)
        ninf = tl.full([BLOCK], float("-inf"), tl.float32)
        zero_i = tl.zeros([BLOCK], tl.int32)
        # per lane: online sum of exp(x - v0) and of exp(x - v0) * x, count above the target, top 5 (v0 >= .. >= v4)
        s = tl.zeros([BLOCK], tl.float32)
        w = tl.zeros([BLOCK], tl.float32)
        above = zero_i
        v0, v1, v2, v3, v4 = ninf, ninf, ninf, ninf, ninf
        i0, i1, i2, i3, i4 = zero_i, zero_i, zero_i, zero_i, zero_i
        for start in range(0, n_vocab, BLOCK):
            idx = start + tl.arange(0, BLOCK)
            x = tl.load(base + idx, mask=idx < n_vocab, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(v0, x)
            alpha = tl.where(m_new > float("-inf"), tl.exp(v0 - m_new), 0.0)
            e = tl.where(x > float("-inf"), tl.exp(x - m_new), 0.0)
            s = s * alpha + e
            w = w * alpha + tl.where(x > float("-inf"), e * x, 0.0)
            above += (x > xt).to(tl.int32)
            v0, i0, x, xi = _insert(x, idx, v0, i0)
            v1, i1, x, xi = _insert(x, xi, v1, i1)
            v2, i2, x, xi = _insert(x, xi, v2, i2)
            v3, i3, x, xi = _insert(x, xi, v3, i3)
            v4, i4, x, xi = _insert(x, xi, v4, i4)
        peak = tl.max(v0, 0)
        scale = tl.where(v0 > float("-inf"), tl.exp(v0 - peak), 0.0)
        total = tl.sum(s * scale, 0)
        lse = peak + tl.log(total)
        tl.store(lp_ptr + row, xt - lse)
        tl.store(ent_ptr + row, lse - tl.sum(w * scale, 0) / total)
        tl.store(rank_ptr + row, tl.sum(above, 0) + 1)
        # the row's top 5 among the lanes' 5 x BLOCK candidates: take the largest (lowest id on ties), remove it
        for r in tl.static_range(5):
            best = tl.maximum(tl.maximum(tl.maximum(tl.max(v0, 0), tl.max(v1, 0)), tl.maximum(tl.max(v2, 0),
                                         tl.max(v3, 0))), tl.max(v4, 0))
            big = n_vocab + 1
            pick = tl.minimum(tl.minimum(tl.minimum(tl.min(tl.where(v0 == best, i0, big), 0),
                                                    tl.min(tl.where(v1 == best, i1, big), 0)),
                                         tl.minimum(tl.min(tl.where(v2 == best, i2, big), 0),
                                                    tl.min(tl.where(v3 == best, i3, big), 0))),
                              tl.min(tl.where(v4 == best, i4, big), 0))
            tl.store(top_i_ptr + row * 5 + r, pick.to(tl.int64))
            tl.store(top_p_ptr + row * 5 + r, tl.exp(best - lse))
            v0 = tl.where(i0 == pick, ninf, v0)
            v1 = tl.where(i1 == pick, ninf, v1)
            v2 = tl.where(i2 == pick, ninf, v2)
            v3 = tl.where(i3 == pick, ninf, v3)
            v4 = tl.where(i4 == pick, ninf, v4)


def _kernel() -> Any:
    """The Triton kernel, or None where Triton does not import."""
    return None if triton is None else _row_stats


def available(logits: Any) -> bool:
    """Whether :func:`row_stats` runs the kernel for ``logits`` (a CUDA tensor, Triton present, no failure yet);
    under Triton's interpreter CPU tensors qualify too."""
    from asc.paths import triton_interpreter

    on_device = bool(getattr(logits, "is_cuda", False)) or triton_interpreter()
    return on_device and not _state["failed"] and _kernel() is not None


def row_stats(logits: Any, targets: Any) -> tuple[Any, Any, Any, Any, Any]:
    """Per row of ``logits`` (n, V), any float dtype, rows contiguous: ``(logprob, entropy, rank, top-5 ids,
    top-5 probabilities)`` of ``targets`` (n,), as float32/int32/int64 tensors on the logits' device (the top 5 in
    descending order; among equal values the lowest id first). Raises where the kernel cannot run; callers check
    :func:`available` and fall back to the eager path on failure (:func:`disable`)."""
    import torch

    n, vocab = logits.shape
    if logits.stride(1) != 1:
        logits = logits.contiguous()
    targets = targets.to(device=logits.device, dtype=torch.int64).contiguous()
    logprob, entropy = (torch.empty(n, dtype=torch.float32, device=logits.device) for _ in range(2))
    rank = torch.empty(n, dtype=torch.int32, device=logits.device)
    top_i = torch.empty((n, TOP), dtype=torch.int64, device=logits.device)
    top_p = torch.empty((n, TOP), dtype=torch.float32, device=logits.device)
    if n:
        _kernel()[(n,)](logits, targets, logprob, entropy, rank, top_i, top_p, logits.stride(0), n_vocab=vocab,
                        BLOCK=BLOCK, num_warps=4)
    return logprob, entropy, rank, top_i, top_p


def disable(err: BaseException) -> None:
    """Stop using the kernel in this process after a failure (logged once); the eager path takes over."""
    if not _state["failed"]:
        log.warning("the fused next-token statistics kernel failed (%s: %s); using the eager torch path",
                    type(err).__name__, str(err).splitlines()[0] if str(err) else "")
    _state["failed"] = True
