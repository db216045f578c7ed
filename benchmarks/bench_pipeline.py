"""`make bench`: what AsC-Eval costs on top of the model's own forward passes, measured in one run.

On the same snippets and the same padded micro-batches, times (a) the bare forward passes of the
model and (b) the whole AsC-Eval pipeline (tokenize, forward, next-token statistics, parse, align,
aggregate), interleaved over several rounds to share the machine's noise, and prints the median
of the per-round overhead ratios (b)/(a) and tokens/s. Target: ratio <= 1.10. Also times the
inspector on a 60-line function: source text to the figure objects of all three views (target:
about a second). Written to ``docs/bench/pipeline.txt`` (:mod:`benchmarks.report`); docs/performance.md quotes it.

``--cpu-side``: the CPU side of a corpus run alone (``benchmarks/cpu_side.py``: ``run_corpus`` with the model's
statistics precomputed, so no forward pass is timed) on the GPU report's 464 functions, in one process and with a
pool of each worker count from 1 to the machine's cores, tokens/s; with ``--against REV`` the same run of a checkout
of REV (``git archive``, run in a child process with its ``asc`` on ``PYTHONPATH``) in the same rounds, interleaved,
and the ratio (target: 3x bb5a099's in one process). Written to ``docs/bench/pipeline_cpu.txt``.
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--snippets", type=int, default=24)
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--cpu-side", action="store_true", help="the CPU side alone (module doc)")
    ap.add_argument("--against", default=None, help="with --cpu-side: also measure this commit, interleaved")
    ap.add_argument("--limit", type=int, default=None, help="with --cpu-side: the first N functions only")
    args = ap.parse_args()
    if args.cpu_side:
        from benchmarks.cpu_report import cpu_side_report

        cpu_side_report(args.against, args.rounds, args.limit, args.batch_size)
        return

    import torch
    from transformers.utils import logging as hf_logging

    from asc.corpus.sources import load_corpus
    from asc.explain import explain, explain_many
    from asc.models import load_model
    from asc.scores import encode, forward_batches
    from asc.viz import category_figure, sequence_html, tree_figure
    from benchmarks.report import Report

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    report = Report("pipeline", "AsC-Eval's pipeline against the bare forward passes, and the inspector's latency")
    bundle = load_model(args.model)
    snippets = [s.source for s in load_corpus("algorithms", limit=args.snippets, min_lines=10, max_lines=60)]
    chunks = [snippets[i : i + args.batch_size] for i in range(0, len(snippets), args.batch_size)]

    def bare() -> None:  # the model alone, on the batches the pipeline builds
        for chunk in chunks:
            batches = forward_batches(bundle, chunk)  # the pipeline's own windows and batches, built untimed
            t0 = time.perf_counter()
            with torch.inference_mode():
                for ids, mask in batches:
                    bundle.model(input_ids=ids, attention_mask=mask, use_cache=False)
            timings["bare"][-1] += time.perf_counter() - t0

    def pipeline() -> None:
        t0 = time.perf_counter()
        for chunk in chunks:
            explain_many(bundle, chunk)
        timings["pipeline"][-1] += time.perf_counter() - t0

    n_tokens = sum(len(encode(bundle, s)[0]) for s in snippets)
    timings: dict[str, list[float]] = {"bare": [0.0], "pipeline": [0.0]}
    pipeline()  # warm-up: first-call caches (vocabulary table, parsers, allocator)
    bare()
    timings = {"bare": [], "pipeline": []}
    for r in range(args.rounds):
        order = (bare, pipeline) if r % 2 == 0 else (pipeline, bare)
        for fn in order:
            timings["bare" if fn is bare else "pipeline"].append(0.0)
            fn()
    b, p = statistics.median(timings["bare"]), statistics.median(timings["pipeline"])
    ratios = sorted(pp / bb for pp, bb in zip(timings["pipeline"], timings["bare"]))

    sixty = next(s.source for s in load_corpus("algorithms", min_lines=55, max_lines=60))

    def inspector():  # what the inspector page does for "Explain": source text -> all figure objects
        t0 = time.perf_counter()
        ex = explain(bundle, sixty)
        t1 = time.perf_counter()
        tree_figure(ex, "partial", collapse_unary=True)
        tree_figure(ex, "complete")
        sequence_html(ex)
        category_figure(ex.category_values)
        return ex, t1 - t0, time.perf_counter() - t1

    inspector()
    runs = [inspector() for _ in range(3)]
    ex = runs[0][0]
    lat = [a + b for _, a, b in runs]
    fig_ms = statistics.median(b for _, _, b in runs) * 1000

    r = report.figure
    report.section("overhead")
    report.line(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, torch threads "
                f"{torch.get_num_threads()}; model {bundle.name} ({bundle.n_params / 1e6:.0f}M params)")
    report.line(f"corpus: {r('snippets', len(snippets))} algorithms functions, {r('tokens', n_tokens)} tokens, batch "
                f"size {args.batch_size}, {args.rounds} interleaved rounds (medians)")
    report.line(f"bare forward passes : {r('bare_s', b, '7.2f')} s  {r('bare_tokens_per_s', n_tokens / b, '7.0f')} "
                "tokens/s")
    report.line(f"AsC-Eval pipeline   : {r('pipeline_s', p, '7.2f')} s  "
                f"{r('pipeline_tokens_per_s', n_tokens / p, '7.0f')} tokens/s")
    report.line(f"overhead ratio      : {r('overhead_ratio', statistics.median(ratios), '7.3f')}  (median of per-round "
                f"ratios, range {r('overhead_low', ratios[0], '.3f')}-{r('overhead_high', ratios[-1], '.3f')}; target "
                "<= 1.10)")
    report.line(f"inspector, one {r('inspector_lines', sixty.count(chr(10)))}-line function "
                f"({r('inspector_tokens', ex.scores.n_tokens)} tokens, {r('inspector_nodes', ex.tree.n_nodes)} nodes), "
                f"source text -> three views + category chart: {r('inspector_ms', statistics.median(lat) * 1000, '.0f')} "
                f"ms (figures {r('inspector_figures_ms', fig_ms, '.0f')} ms; median of 3)")
    report.write()

if __name__ == "__main__":
    main()
