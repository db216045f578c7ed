"""AsC-Causal at scale (issue 16): ``python -m asc causal`` on 10,000 and 100,000 snippets, and how the
estimates and the refuters' verdicts move with the refuter subsample.

Data: a real run folder (``--base``; e.g. 40 HumanEval functions scored by the default model:
``python -m asc eval --model smollm2-135m --corpus humaneval --limit 40 --out /tmp/causal40``) tiled to
N snippets with new ids (``<id>~<copy>``) and seeded Gaussian noise on the loss (``--noise`` nats, so
that the copies are not exact duplicates and the regressions are not degenerate). Only the two tables
AsC-Causal reads are written (``snippets`` and ``concepts``, in parts of 1,000 snippets like a run).

Prints, for each size:

* the whole command, ``python -m asc causal RUN --out ... --quiet`` in a fresh process: wall time and the
  peak of its resident memory summed with its worker processes' (sampled with psutil every 50 ms);
* its stages in another fresh process: imports, reading the run, ``snippet_table``, ``causal_table``, and
  that process's own peak memory (``getrusage``);
* the cost of the complexity confounder for runs that do not store it, on distinct sources (the tiled
  folders repeat 40 sources, which ``snippet_table`` computes once each): the stdlib corpus's functions
  with :func:`asc.complexity.complexity_of_source` and with lizard.

Then the sweep on the largest size: ``causal_table`` with the refuters on 500, 1,000, 2,000, 5,000
snippets and all of them: time, and per treatment the effect on all rows, the effect the refuters
checked, and the three verdicts (P/F for placebo, random common cause, subset); with a summary of how
many verdicts differ from those on all rows.

    python benchmarks/bench_causal.py --base /tmp/causal40            # 10k and 100k, sweep on 100k
    python benchmarks/bench_causal.py --base /tmp/causal40 --sizes 10000 --sweep-size 10000

Written to ``docs/bench/causal.txt`` (:mod:`benchmarks.report`); docs/corpora.md quotes it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import resource
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.report import Report  # noqa: E402  (after the path)


def make_causal_run(base: str | Path, n: int, out: str | Path, noise: float = 0.05, seed: int = 0,
                    part_size: int = 1000) -> Path:
    """A folder with ``n`` snippets tiled from ``base`` (its meta.json, snippets and concepts tables only)."""
    import numpy as np
    import pandas as pd

    from asc.corpus.runs import load_run

    src = load_run(base, tables=("snippets", "concepts"))
    out = Path(out)
    for table in ("snippets", "concepts"):
        (out / table).mkdir(parents=True, exist_ok=False)
    reps = -(-n // len(src.snippets))
    snippets = pd.concat([src.snippets.assign(id=src.snippets["id"] + f"~{k}") for k in range(reps)],
                         ignore_index=True).iloc[:n].copy()
    snippets["loss"] = snippets["loss"] + np.random.default_rng(seed).normal(0.0, noise, n)
    by_id = src.concepts.groupby("snippet_id").indices
    base_ids = src.snippets["id"].tolist()
    for part, start in enumerate(range(0, n, part_size)):
        chunk = snippets.iloc[start:start + part_size]
        frames = []
        for k in range(start, start + len(chunk)):
            c = src.concepts.iloc[by_id[base_ids[k % len(base_ids)]]].copy()
            c["snippet_id"] = f"{base_ids[k % len(base_ids)]}~{k // len(base_ids)}"
            frames.append(c)
        name = f"part-{part:05d}.parquet"
        pd.concat(frames, ignore_index=True).to_parquet(out / "concepts" / name, index=False)
        chunk.to_parquet(out / "snippets" / name, index=False)
    meta = src.meta.as_dict() | {"n_planned": n, "synthetic": {"base": str(base), "noise": noise, "seed": seed}}
    meta.pop("corpus", None)
    (out / "meta.json").write_text(json.dumps(meta, indent=2))
    return out


def stages(run: str, refute_sample: str, jobs: int, simulations: int) -> dict:
    """Run in a fresh process (``--stages``): time of each step of ``python -m asc causal``."""
    warnings.simplefilter("ignore")
    t0 = time.perf_counter()
    from asc.causal import causal_table, snippet_table, treatments_of
    from asc.concepts import load_categories
    from asc.corpus.runs import load_run

    t1 = time.perf_counter()
    data = load_run(run, tables=("snippets", "concepts"))
    t2 = time.perf_counter()
    table = snippet_table(data)
    t3 = time.perf_counter()
    sample = None if refute_sample == "all" else int(refute_sample)
    causal_table(table, treatments_of(load_categories("python")), simulations=simulations, refute_sample=sample,
                 jobs=jobs)
    t4 = time.perf_counter()
    return {"import": t1 - t0, "load_run": t2 - t1, "snippet_table": t3 - t2, "causal_table": t4 - t3,
            "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}  # kB on Linux


def _fresh(args: list[str]) -> tuple[float, float, str]:
    """Run ``args`` in a fresh process: wall time, peak of the summed resident memory of it and its descendants
    (the refuters' worker processes included; sampled every 50 ms with psutil, NaN without it), stdout."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    try:
        import psutil
    except ImportError:
        out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, env=env)
        wall, peak, stdout, stderr, rc = time.perf_counter() - t0, math.nan, out.stdout, out.stderr, out.returncode
    else:
        with tempfile.TemporaryFile("w+") as so, tempfile.TemporaryFile("w+") as se:
            proc = psutil.Popen(args, cwd=ROOT, stdout=so, stderr=se, text=True, env=env)
            peak = 0.0
            while proc.poll() is None:
                total = 0
                try:
                    for p in [proc, *proc.children(recursive=True)]:
                        total += p.memory_info().rss
                except psutil.Error:
                    pass
                peak = max(peak, total / 2**20)
                time.sleep(0.05)
            wall, rc = time.perf_counter() - t0, proc.returncode
            so.seek(0)
            se.seek(0)
            stdout, stderr = so.read(), se.read()
    if rc != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{stderr[-3000:]}")
    return wall, peak, stdout


def command(run: Path, refute_sample: str, jobs: int, simulations: int) -> dict:
    """``python -m asc causal`` in a fresh process: wall time and peak memory (with its workers)."""
    with tempfile.TemporaryDirectory() as tmp:
        wall, peak, _ = _fresh([sys.executable, "-m", "asc", "causal", str(run), "--out", f"{tmp}/c.csv", "--quiet",
                                "--refute-sample", refute_sample, "--jobs", str(jobs), "--simulations",
                                str(simulations)])
    return {"wall_s": wall, "peak_mb": peak}


def complexity_cost(limit: int) -> dict:
    """Complexity of distinct stdlib functions: ours vs lizard, ms per snippet."""
    import math

    import lizard

    from asc.complexity import complexity_of_source
    from asc.corpus.sources import load_corpus

    sources = [s.source for s in load_corpus("stdlib", limit=limit, min_lines=1, max_lines=None)]
    t0 = time.perf_counter()
    ours = [complexity_of_source(s) for s in sources]
    t1 = time.perf_counter()
    theirs = []
    for s in sources:
        info = lizard.analyze_file.analyze_source_code("s.py", s)
        theirs.append(float(info.function_list[0].cyclomatic_complexity) if info.function_list else math.nan)
    t2 = time.perf_counter()
    same = sum(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(ours, theirs))
    return {"n": len(sources), "ours_ms": 1e3 * (t1 - t0) / len(sources), "lizard_ms": 1e3 * (t2 - t1) / len(sources),
            "equal": same}


def sweep(report: Report, run: Path, subsamples: list[str], jobs: int, simulations: int, seed: int) -> None:
    import numpy as np
    import pandas as pd

    from asc.causal import causal_table, snippet_table, treatments_of
    from asc.concepts import load_categories
    from asc.corpus.runs import load_run

    warnings.simplefilter("ignore")
    table = snippet_table(load_run(run, tables=("snippets", "concepts")))
    treatments = treatments_of(load_categories("python"))
    results, times = {}, {}
    for s in subsamples:
        t0 = time.perf_counter()
        res = causal_table(table, treatments, simulations=simulations, seed=seed, jobs=jobs,
                           refute_sample=None if s == "all" else int(s))
        times[s] = time.perf_counter() - t0
        results[s] = res[res["status"] == "estimated"].set_index("treatment")
        print(f"  refute_sample={s}: {times[s]:.1f} s", flush=True)  # progress, not kept
    ref = results[subsamples[-1]]

    def verdicts(row: pd.Series) -> str:
        return "".join("P" if str(row[c]).startswith("passed") else "F" for c in ("placebo", "random_cause", "subset"))

    report.section("treatments")
    report.line(f"Per treatment ({len(table):,} snippets; ATE on all rows; per subsample: the effect the refuters "
                "checked, and placebo/random cause/subset verdicts)\n")
    head = f"{'treatment':<34} {'n':>7} {'ATE':>8} " + " ".join(f"{s:>15}" for s in subsamples)
    report.line(head)
    for t in ref.index:
        cells = [f"{results[s].loc[t, 'refute_ate']:+7.3f} {verdicts(results[s].loc[t]):>3}" for s in subsamples]
        report.line(f"{t:<34} {int(ref.loc[t, 'n']):>7} {ref.loc[t, 'ate']:+8.3f} " + " ".join(f"{c:>15}" for c in cells))
    report.section("sweep")
    report.line(f"Summary against refute_sample={subsamples[-1]} ({len(ref)} estimated treatments, 3 verdicts each; "
                "refute_ate: the effect re-estimated on the subsample, which the refuters check)\n")
    report.line(f"{'refute_sample':>13} {'time s':>7} {'verdicts differing':>19} {'passed placebo/rcc/subset':>26} "
                f"{'refute_ate sign = ATE sign':>27} {'median |refute_ate-ATE|/|ATE|':>30}")
    for s in subsamples:
        r = results[s]
        differ = sum(verdicts(r.loc[t])[i] != verdicts(ref.loc[t])[i] for t in ref.index for i in range(3))
        passed = "/".join(str(int(r[c].str.startswith("passed").sum())) for c in ("placebo", "random_cause", "subset"))
        sign = int((np.sign(r["refute_ate"]) == np.sign(r["ate"])).sum())
        rel = float(((r["refute_ate"] - r["ate"]).abs() / r["ate"].abs()).median())
        report.line(f"{s:>13} {report.figure(f'sweep_{s}_s', times[s], '>7.1f')} "
                    f"{report.figure(f'sweep_{s}_differing', differ, '>19')} {passed:>26} {sign:>21}/{len(r):<5} "
                    f"{report.figure(f'sweep_{s}_rel', rel, '>30.3f')}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", default="/tmp/causal40", help="a real run folder to tile")
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--sweep-size", type=int, default=100_000, help="snippets of the subsample sweep (0: none)")
    ap.add_argument("--subsamples", nargs="+", default=["500", "1000", "2000", "5000", "all"])
    ap.add_argument("--refute-sample", default="5000", help="of the timed command (the CLI default)")
    ap.add_argument("--jobs", type=int, default=min(4, os.cpu_count() or 1))
    ap.add_argument("--simulations", type=int, default=50)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--noise", type=float, default=0.05, help="sd of the Gaussian noise on the loss (nats)")
    ap.add_argument("--complexity-limit", type=int, default=5000, help="stdlib functions for the complexity cost")
    ap.add_argument("--workdir", default=None, help="where the synthetic folders go (default: a temporary folder)")
    ap.add_argument("--stages", default=None, help=argparse.SUPPRESS)  # internal: one fresh process
    args = ap.parse_args()
    if args.stages:
        print(json.dumps(stages(args.stages, args.refute_sample, args.jobs, args.simulations)))
        return

    report = Report("causal", "AsC-Causal at scale: `python -m asc causal` on tiled runs, and the refuter subsample")
    fig = report.figure
    report.line(f"AsC-Causal benchmark: {os.cpu_count()} CPU cores, jobs={args.jobs}, {args.simulations} simulations "
                f"per refuter, refute_sample={args.refute_sample}, base {args.base}, loss noise sd {args.noise}")
    with tempfile.TemporaryDirectory(dir=args.workdir) as tmp:
        folders = {}
        for n in sorted(set(args.sizes) | ({args.sweep_size} - {0})):
            t0 = time.perf_counter()
            folders[n] = make_causal_run(args.base, n, Path(tmp) / f"r{n}", noise=args.noise, seed=args.seed)
            print(f"built {n:,} snippets in {time.perf_counter() - t0:.1f} s", flush=True)  # progress, not kept
        report.section("command")
        report.line("command: `python -m asc causal RUN` (wall s; peak GB of it and its workers together); stages: the "
                    "same steps in another fresh process (s; peak MB of the main process alone)\n")
        report.line(f"{'snippets':>9} {'command s':>10} {'peak GB':>8} | {'import':>7} {'load':>6} "
                    f"{'snippet_table':>14} {'causal_table':>13} {'main MB':>8}")
        for n in args.sizes:
            cmd = command(folders[n], args.refute_sample, args.jobs, args.simulations)
            _, _, out = _fresh([sys.executable, __file__, "--stages", str(folders[n]), "--refute-sample",
                                args.refute_sample, "--jobs", str(args.jobs), "--simulations", str(args.simulations)])
            st = json.loads(out.strip().splitlines()[-1])
            report.line(f"{n:>9,} {fig(f'causal_{n}_s', cmd['wall_s'], '>10.1f')} "
                        f"{fig(f'causal_{n}_gb', cmd['peak_mb'] / 1024, '>8.2f')} | "
                        f"{st['import']:>7.1f} {st['load_run']:>6.1f} {st['snippet_table']:>14.1f} "
                        f"{st['causal_table']:>13.1f} {st['peak_mb']:>8.0f}")
        cc = complexity_cost(args.complexity_limit)
        report.section("complexity")
        report.line(f"complexity of {fig('complexity_n', cc['n'], ',')} distinct stdlib functions: "
                    f"{fig('complexity_ms', cc['ours_ms'], '.3f')} ms each from the tree-sitter parse, "
                    f"{fig('lizard_ms', cc['lizard_ms'], '.3f')} ms with lizard ({fig('complexity_equal', cc['equal'], ',')} "
                    f"equal); for 100,000 distinct snippets {cc['ours_ms'] * 100:.1f} s vs {cc['lizard_ms'] * 100:.1f} s")
        if args.sweep_size:
            print(f"\nRefuter subsample sweep on {args.sweep_size:,} snippets (jobs={args.jobs}):")
            sweep(report, folders[args.sweep_size], args.subsamples, args.jobs, args.simulations, args.seed)
    report.write()

if __name__ == "__main__":
    main()
