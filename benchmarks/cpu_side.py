"""The CPU side of a corpus run, alone: ``run_corpus`` with the model's statistics replaced by precomputed ones.

A child process of ``bench_pipeline.py --cpu-side`` (and of the GPU report's pipeline section), run with the
``asc`` of one checkout on ``PYTHONPATH`` (this one, or an older commit's for ``--against``): it loads a model for
its tokenizer and vocabulary only, the corpus of the GPU report (HumanEval and 300 ``algorithms`` functions),
and replaces ``asc.scores._forward_rows`` (the forward passes and the next-token statistics: the one seam both
the old and the new pipeline call) by a lookup of deterministic random statistics of the right shapes,
computed once before any timing. What is timed is everything else a run does: tokenizing, parsing, aligning,
aggregating, building the tables and writing the Parquet parts into a fresh run folder.

Protocol: after setup it prints one JSON line ``{"ready", "tokens", "snippets", "pool"}``; then each line read
from stdin, ``run W`` (W: worker processes for the new pipeline; ignored by a checkout without them), runs one
timed corpus run and prints ``{"seconds"}``. The parent interleaves rounds of several children this way.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import shutil
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def corpus(limit: int | None) -> list:
    """The GPU report's functions: every HumanEval problem and 300 ``algorithms`` functions (``limit``: the first)."""
    from asc.corpus.sources import load_corpus

    found = list(load_corpus("humaneval")) + list(load_corpus("algorithms", limit=300))
    return found[:limit] if limit else found


def fake_stats(bundle, sources: list[str], k: int) -> dict:
    """Per window row ``(ids bytes, first)``: the five arrays ``_forward_rows`` returns, random but seeded."""
    import numpy as np

    from asc.scores import encode, window_rows, window_size

    rows, _ = window_rows([encode(bundle, s)[0] for s in sources], window_size(bundle, None))
    rng = np.random.default_rng(0)
    vocab = len(bundle.tokenizer)
    table = {}
    for ids, first in rows:
        n = max(0, len(ids) - first)
        top = rng.dirichlet(np.ones(k), size=n).astype(np.float32)
        table[(ids.tobytes(), first)] = [np.log(rng.uniform(0.01, 1.0, n)).astype(np.float32),
                                         rng.uniform(0.0, 5.0, n).astype(np.float32),
                                         rng.integers(1, 50, n).astype(np.int32),
                                         rng.integers(0, vocab, (n, k)).astype(np.int64), -np.sort(-top, axis=1)]
    return table


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--limit", type=int, default=None, help="the first N functions only (dry runs)")
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--threads", type=int, default=1, help="torch threads (the forward pass is not run)")
    args = ap.parse_args()

    import torch
    from transformers.utils import logging as hf_logging

    torch.set_num_threads(args.threads)
    hf_logging.set_verbosity_error()
    import asc.scores as scores
    from asc.corpus.runs import run_corpus
    from asc.models import load_model

    bundle = load_model(args.model)
    snippets = corpus(args.limit)
    k = min(scores.TOP_K, len(bundle.tokenizer))
    table = fake_stats(bundle, [s.source for s in snippets], k)
    scores._forward_rows = lambda bundle, rows, k: [table[(ids.tobytes(), first)] for ids, first in rows]
    n_tokens = sum(len(scores.encode(bundle, s.source)[0]) for s in snippets)
    pool = "cpu_workers" in inspect.signature(run_corpus).parameters
    scratch = tempfile.mkdtemp(prefix="asc-cpu-side-")
    print(json.dumps({"ready": True, "tokens": n_tokens, "snippets": len(snippets), "pool": pool}), flush=True)
    try:
        for n, line in enumerate(sys.stdin):
            words = line.split()
            if not words or words[0] != "run":
                break
            extra = {"cpu_workers": int(words[1])} if pool and len(words) > 1 else {}
            out = os.path.join(scratch, f"run{n}")
            t0 = time.perf_counter()
            run_corpus(bundle, snippets, out, batch_size=args.batch_size, progress=False, **extra)
            seconds = time.perf_counter() - t0
            shutil.rmtree(out, ignore_errors=True)
            print(json.dumps({"seconds": seconds}), flush=True)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
