"""One-pass next-token statistics on CUDA: log-probability, entropy and rank of the actual token.

:func:`asc.scores.token_stats` needs, per predicted position, ``log p(target)``, the entropy of the
predicted distribution and the rank of the target over the whole vocabulary. The eager torch path
(:func:`asc.scores._stats`) converts the logits to float32 and makes several passes over them plus
one temporary; at Gemma-3's 262k vocabulary it ran at 99k tokens/s on an H100 and ``torch.compile``
at 414k, while one read of the bfloat16 logits allows about 5.3M (measured on the project's H100, 2026-11-23).

:func:`row_stats` reads each row of logits once, in their own dtype, in a Triton kernel: per lane an
online maximum ``m``, sum of ``exp(x - m)``, sum of ``exp(x - m) * x`` (for the entropy
``H = logsumexp - E[x]``) and the count of logits above the target's (rank = count + 1, ties not
counted, as in the eager path); lanes merge at the end. The top-k alternatives come from a two-stage
``torch.topk`` on the same logits (:func:`top_k`, a second read), their probabilities from the kernel's
logsumexp. The first GPU report (``docs/gpu-report.md``) measured each part.

The kernel runs only for CUDA tensors and only where Triton imports. Any other case, and a kernel
that fails to compile or launch (logged once, then the eager path for the rest of the process), use
the eager path, which the GPU tests (``pytest -m gpu``) compare it against. Triton's interpreter
(``TRITON_INTERPRET=1``) runs the same kernel on the CPU, which the unit tests use where Triton is
installed.
"""

from __future__ import annotations

import functools
import logging
from typing import Any

log = logging.getLogger(__name__)

BLOCK = 2048  # vocabulary entries per lane block: 8 per thread at 8 warps
CHUNK = 1024  # entries per block of the two-stage top-k
_state = {"failed": False}


@functools.cache
def _kernel() -> Any:
    """The compiled Triton kernel, or None where Triton does not import."""
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def _row_stats(x_ptr, t_ptr, lp_ptr, ent_ptr, rank_ptr, lse_ptr, stride, n_vocab: tl.constexpr,
                   BLOCK: tl.constexpr):
        row = tl.program_id(0)
        base = x_ptr + row.to(tl.int64) * stride
        target = tl.load(t_ptr + row)
        xt = tl.load(base + target).to(tl.float32)
        m = tl.full([BLOCK], float("-inf"), tl.float32)
        s = tl.zeros([BLOCK], tl.float32)
        w = tl.zeros([BLOCK], tl.float32)
        above = tl.zeros([BLOCK], tl.int32)
        for start in range(0, n_vocab, BLOCK):
            idx = start + tl.arange(0, BLOCK)
            x = tl.load(base + idx, mask=idx < n_vocab, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, x)
            live = m_new > float("-inf")
            alpha = tl.where(live, tl.exp(m - m_new), 0.0)
            e = tl.where(x > float("-inf"), tl.exp(x - m_new), 0.0)
            s = s * alpha + e
            w = w * alpha + tl.where(x > float("-inf"), e * x, 0.0)
            above += (x > xt).to(tl.int32)
            m = m_new
        peak = tl.max(m, 0)
        scale = tl.where(m > float("-inf"), tl.exp(m - peak), 0.0)
        total = tl.sum(s * scale, 0)
        lse = peak + tl.log(total)
        tl.store(lp_ptr + row, xt - lse)
        tl.store(ent_ptr + row, lse - tl.sum(w * scale, 0) / total)
        tl.store(rank_ptr + row, tl.sum(above, 0) + 1)
        tl.store(lse_ptr + row, lse)

    return _row_stats


def available(logits: Any) -> bool:
    """Whether :func:`row_stats` runs the kernel for ``logits`` (a CUDA tensor, Triton present, no failure yet);
    under Triton's interpreter CPU tensors qualify too."""
    from asc.paths import triton_interpreter

    on_device = bool(getattr(logits, "is_cuda", False)) or triton_interpreter()
    return on_device and not _state["failed"] and _kernel() is not None


def row_stats(logits: Any, targets: Any) -> tuple[Any, Any, Any, Any]:
    """Per row of ``logits`` (n, V), any float dtype, rows contiguous: ``(logprob, entropy, rank, logsumexp)``
    of ``targets`` (n,), as float32/int32 tensors on the logits' device. Raises where the kernel cannot run;
    callers check :func:`available` and fall back to the eager path on failure (:func:`disable`)."""
    import torch

    n, vocab = logits.shape
    if logits.stride(1) != 1:
        logits = logits.contiguous()
    targets = targets.to(device=logits.device, dtype=torch.int64).contiguous()
    out = [torch.empty(n, dtype=torch.float32, device=logits.device) for _ in range(2)]
    rank = torch.empty(n, dtype=torch.int32, device=logits.device)
    lse = torch.empty(n, dtype=torch.float32, device=logits.device)
    if n:
        _kernel()[(n,)](logits, targets, out[0], out[1], rank, lse, logits.stride(0), n_vocab=vocab, BLOCK=BLOCK,
                        num_warps=8)
    return out[0], out[1], rank, lse


def top_k(logits: Any, k: int) -> tuple[Any, Any]:
    """``logits.topk(k)`` over the last axis of (n, V) in two stages: the top k of each block of :data:`CHUNK`
    entries (many short rows, which GPUs sort far faster than a few 262k-wide ones), then the top k of those
    candidates and of the last ``V % CHUNK`` entries. The same values; among equal values another id may win."""
    import torch

    n, vocab = logits.shape
    main = vocab - vocab % CHUNK
    if main < 16 * CHUNK or logits.stride(1) != 1:
        return logits.topk(k, dim=-1)
    blocks = logits.as_strided((n, main // CHUNK, CHUNK), (logits.stride(0), CHUNK, 1))
    values, ids = blocks.topk(k, dim=-1)
    ids = ids + torch.arange(0, main, CHUNK, device=logits.device)[None, :, None]
    values, ids = values.reshape(n, -1), ids.reshape(n, -1)
    if main < vocab:
        values = torch.cat([values, logits[:, main:]], 1)
        ids = torch.cat([ids, torch.arange(main, vocab, device=logits.device).expand(n, -1)], 1)
    top, pick = values.topk(k, dim=-1)
    return top, ids.gather(1, pick)


def disable(err: BaseException) -> None:
    """Stop using the kernel in this process after a failure (logged once); the eager path takes over."""
    if not _state["failed"]:
        log.warning("the fused next-token statistics kernel failed (%s: %s); using the eager torch path",
                    type(err).__name__, str(err).splitlines()[0] if str(err) else "")
    _state["failed"] = True
