"""The GPU report's measure of a corpus run's CPU side (issue 46), part of its pipeline section.

Two tables on the smallest architecture (SmolLM2's shape, random weights, the report's functions):

- the CPU side alone: ``run_corpus`` with the model's statistics precomputed (``benchmarks/cpu_side.py``'s
  stand-in for ``asc.scores._forward_rows``), in one process and with pools of worker processes, tokens/s: how fast
  the CPU can feed a GPU, and how it scales with the machine's cores;
- a real ``run_corpus`` on the GPU in one process and with the default pool (:func:`asc.corpus.feed.default_workers`),
  tokens/s: the pipeline's speed with the CPU's work beside the model's.

Each run starts its own pool, so the workers' start is in the time, as in a real run.
"""

from __future__ import annotations

import os
import shutil
import time
from typing import Any


def measure(ctx: Any, bundle: Any, texts: list[str]) -> None:
    """Append the two tables to ``ctx.lines`` and their figures to ``ctx.figures["cpu_side"]``."""
    import asc.scores as scores
    from asc.corpus.feed import default_workers
    from asc.corpus.runs import run_corpus
    from asc.corpus.sources import Snippet
    from benchmarks.cpu_side import fake_stats

    snippets = [Snippet(id=f"s{i}", source=t) for i, t in enumerate(texts)]
    n_tokens = sum(len(scores.encode(bundle, t)[0]) for t in texts)
    cores = os.cpu_count() or 1
    auto = default_workers(ctx.device.type, cores)
    counts = [0, 1] if ctx.dry else sorted({0, 1, 2, 4, 8, auto} & set(range(cores + 1)))
    figures: dict[str, Any] = {"tokens": n_tokens, "cores": cores, "default_workers": auto}

    def timed(workers: int, name: str) -> float:
        out = ctx.work / f"feed-{name}-{workers}"
        t0 = time.perf_counter()
        run_corpus(bundle, snippets, out, progress=False, cpu_workers=workers)
        ctx.sync()
        seconds = time.perf_counter() - t0
        shutil.rmtree(out, ignore_errors=True)
        return seconds

    table = fake_stats(bundle, texts, min(scores.TOP_K, len(bundle.tokenizer)))
    forward = scores._forward_rows
    scores._forward_rows = lambda bundle, rows, k: [table[(ids.tobytes(), first)] for ids, first in rows]
    try:
        timed(0, "warm")
        side = {w: n_tokens / min(timed(w, "side") for _ in range(ctx.rounds)) for w in counts}
    finally:
        scores._forward_rows = forward
    figures["cpu_side"] = side
    ctx.lines += ["", f"The CPU side of `run_corpus` alone (statistics precomputed, no forward pass), {n_tokens:,} "
                  f"tokens, {cores} cores (best of {ctx.rounds}; a pool's start included):", "",
                  "| worker processes | tokens/s | speed-up over one process |", "| --- | --- | --- |",
                  *[f"| {w or 'none (in process)'} | {v:,.0f} | {v / side[0]:.2f} |" for w, v in side.items()]]
    real = {w: n_tokens / min(timed(w, "real") for _ in range(ctx.rounds)) for w in sorted({0, auto})}
    figures["run_corpus"] = real
    ctx.lines += ["", f"`run_corpus` on {ctx.device.type} (forward passes included), tokens/s: "
                  + ", ".join(f"{v:,.0f} with {w or 'no'} worker processes" for w, v in real.items())
                  + f" (default here: {auto})."]
    ctx.figures["cpu_side"] = figures
    if not ctx.dry:
        ctx.target("CPU side of a corpus run, default pool, tokens/s", side.get(auto, side[0]), 330_000)
