"""`make bench`: the Ray engine (local Ray, 2 actors) against the local engine, through the command line.

Runs ``python -m asc eval --model M --corpus humaneval --limit N`` with ``--engine ray --workers 2`` and with
``--engine local`` into fresh folders, each a whole process (imports, model loads and, for Ray, starting Ray
and its actors included), over ``--rounds`` interleaved rounds (alternating which engine goes first), prints
the wall times and the median ratio ray/local (target on a 2-core machine: <= 1.3), and checks that the two
run folders hold the same four tables value for value. Written to ``docs/bench/ray.txt``
(:mod:`benchmarks.report`; Ray's worker processes count there as other work); docs/ray.md quotes it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
KEYS = {"snippets": ["id"], "tokens": ["snippet_id", "index"], "nodes": ["snippet_id", "id"],
        "concepts": ["snippet_id", "kind", "name"]}


def timed_eval(args: argparse.Namespace, out: Path, *engine: str) -> float:
    cmd = [sys.executable, "-m", "asc", "eval", "--model", args.model, "--corpus", "humaneval", "--limit",
           str(args.snippets), "--out", str(out), "--quiet", "--n-boot", "50", *engine]
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--snippets", type=int, default=40)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()

    import pandas as pd

    from asc.corpus.runs import load_run
    from benchmarks.report import Report

    report = Report("ray", f"the Ray engine ({args.workers} actors, local Ray) against the local engine, whole "
                    "`python -m asc eval` processes")
    report.section("rounds")
    ratios, times = [], {"ray": [], "local": []}
    for r in range(args.rounds):  # interleaved, alternating which goes first: a shared machine's noise is shared
        with tempfile.TemporaryDirectory() as tmp:
            order = ("ray", "local") if r % 2 == 0 else ("local", "ray")
            took = {}
            for engine in order:
                extra = ("--workers", str(args.workers)) if engine == "ray" else ()
                took[engine] = timed_eval(args, Path(tmp) / engine, "--engine", engine, *extra)
                times[engine].append(took[engine])
            ratios.append(took["ray"] / took["local"])
            a, b = load_run(Path(tmp) / "local"), load_run(Path(tmp) / "ray")
            for table, keys in KEYS.items():
                x = getattr(a, table).sort_values(keys).reset_index(drop=True)
                y = getattr(b, table).sort_values(keys).reset_index(drop=True)
                pd.testing.assert_frame_equal(x, y)
        report.line(f"round {r + 1}: local {took['local']:.1f} s, ray {took['ray']:.1f} s, ratio {ratios[-1]:.2f}")
    fig = report.figure
    report.line(f"{args.model}, {args.snippets} HumanEval snippets, {os.cpu_count()} cores: local engine "
                f"{fig('local_s', statistics.median(times['local']), '.1f')} s, Ray engine ({args.workers} actors, local "
                f"Ray) {fig('ray_s', statistics.median(times['ray']), '.1f')} s (medians of {args.rounds}); ratio "
                f"ray/local {fig('ratio', statistics.median(ratios), '.2f')} (median of per-round ratios; target <= 1.3); "
                "the four tables are equal")
    report.write()


if __name__ == "__main__":
    main()
