"""`make bench` (glueCode): the cost per item of each task, at the function and the file level.

Builds the five task sets from the ``algorithms`` package (``--size`` items per task, the test half answered;
kept under ``build/bench-gluecode``), loads SmolLM2 and answers every task at each level, timing each task as a
whole. Prints per task, level and mode: seconds per item, tokens the model ran per item, and the same in units
of one bare forward pass over the item's function (measured in the same run on the same items), which is the
number that travels between machines. Zero-shot predictions are not kept: this measures cost, not accuracy.
Written to ``docs/bench/gluecode.txt`` (:mod:`benchmarks.report`); docs/gluecode.md quotes it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def bare_pass_seconds(bundle, texts: list[str]) -> float:
    """Median seconds of one forward pass over one text (no hidden states, no cache)."""
    import torch

    times = []
    with torch.inference_mode():
        for text in texts:
            ids = bundle.tokenizer(text, return_tensors="pt")["input_ids"][:, :2048]
            t = time.perf_counter()
            bundle.model(ids)
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="smollm2-135m")
    parser.add_argument("--corpus", default="algorithms")
    parser.add_argument("--size", type=int, default=24, help="items per task (half are answered)")
    parser.add_argument("--out", default="build/bench-gluecode", help="where the task sets are kept")
    parser.add_argument("--levels", default="function,file")
    args = parser.parse_args()

    from transformers.utils import logging as hf_logging

    from asc.models import load_model
    from benchmarks.report import Report
    from probes.gluecode.items import TASKS
    from probes.gluecode.runs import build_or_load
    from probes.gluecode.zeroshot import predict

    hf_logging.set_verbosity_error()
    report = Report("gluecode", f"glueCode's cost per item of each task, {args.model}, function and file levels")
    t = time.perf_counter()
    items = build_or_load(args.out, args.corpus, TASKS, args.size, 0)
    report.line(f"task sets ({args.corpus}, {args.size} per task): {time.perf_counter() - t:.1f} s (cached after the "
                "first run)")
    bundle = load_model(args.model)
    tests = {task: [it for it in task_items if it.split == "test"] for task, task_items in items.items()}
    functions = [it.function for task_items in tests.values() for it in task_items]
    predict(bundle, tests["OPS"][:2], "function")  # warm-up: first calls pay for allocations
    bare = bare_pass_seconds(bundle, functions)
    report.line(f"{args.model}: one bare forward pass over a function: {report.figure('bare_ms', bare * 1000, '.0f')} "
                f"ms (median of {len(functions)})")
    report.section("table")
    report.line(f"{'task':6} {'level':9} {'mode':9} {'items':>5} {'s/item':>7} {'tokens/item':>11} {'x bare pass':>11}")
    for level in args.levels.split(","):
        for task in TASKS:
            if not tests[task]:
                continue
            modes = ("generate", "rank") if task == "NAME" else (None,)
            for mode in modes:
                extra = {"name_modes": (mode,)} if mode else {}
                t = time.perf_counter()
                preds = predict(bundle, tests[task], level, **extra)
                per_item = (time.perf_counter() - t) / len(tests[task])
                tokens = statistics.mean(p.forward_tokens for p in preds)
                key = f"{task.lower()}_{level}_{mode or preds[0].mode}"
                report.line(f"{task:6} {level:9} {(mode or preds[0].mode):9} {len(tests[task]):5d} "
                            f"{report.figure(key + '_s', per_item, '7.2f')} {report.figure(key + '_tokens', tokens, '11.0f')} "
                            f"{report.figure(key + '_x_bare', per_item / bare, '11.1f')}")
    report.write()


if __name__ == "__main__":
    main()
