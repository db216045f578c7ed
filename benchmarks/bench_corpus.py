"""`make bench`: whole-corpus summaries at 10,000 and 100,000 snippets (issue 16), time and peak memory.

Builds the run folders the way issue 16's table was measured: a real small run (``--base``, default: 40
HumanEval functions scored by the default model, made here when not given) copied with new snippet ids
(:mod:`benchmarks.synthetic_runs`) to each size in ``--sizes``. For each size, each step runs in a fresh
process (as a user would run it), and the wall time and peak resident memory of that process are reported:

* ``compare``: ``python -m asc compare RUN`` (Table I, every category, 500 resamples; snippet bootstrap, and
  ``--bootstrap node``), target <= 5 s and <= 1 GB at 100,000 snippets;
* ``global page``: the Global AsC-Eval page's first render (Streamlit AppTest, a fresh app process), target
  <= 3 s at 100,000 snippets (the process's imports are reported apart: they are paid once per app);
* ``causal``: ``python -m asc causal RUN``, target <= 60 s at 100,000 snippets;
* ``ten models``: ``compare`` of ten 100,000-snippet runs side by side (hard-linked copies of the largest run
  under ten model names), target <= 30 s.

The growth from the smallest to the largest size is printed per step. ``--sizes 1000000`` streams a run of a
million snippets (80 million nodes) through ``compare`` and reports its time and memory (the limit there is
16 GB). Run folders go to ``--work`` (default: a temporary folder, removed after).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PAGE_CHILD = """
import os, sys, time
t0 = time.perf_counter()
from streamlit.testing.v1 import AppTest
import asc.corpus.summary, asc.viz, plotly.graph_objects, pandas  # the app process's imports, paid once
imports = time.perf_counter() - t0
at = AppTest.from_file(os.path.join(sys.argv[1], "pages", "global_eval.py"), default_timeout=600)
t1 = time.perf_counter()
at.run()
render = time.perf_counter() - t1
assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
assert len(at.dataframe) >= 2, "Table I was not drawn"
print(f"RESULT {render:.3f} {imports:.3f}")
"""


PEAK = ("import atexit, resource, sys; atexit.register(lambda: print('PEAK_KB', "
        "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)); ")


def measured(args: list[str], env: dict | None = None) -> tuple[float, float, str]:
    """Run ``python -m asc ARGS`` (or ``python -c CODE ...`` when ``args[0] == "-c"``) in a fresh process;
    (wall seconds, the process's peak RSS in GB, stdout). Fails loudly when the command fails."""
    if args[0] == "-c":
        cmd = [sys.executable, "-c", PEAK + args[1], *args[2:]]
    else:
        code = PEAK + f"sys.argv = ['asc', *{args!r}]; import runpy; runpy.run_module('asc', run_name='__main__')"
        cmd = [sys.executable, "-c", code]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env={**os.environ, **(env or {})}, cwd=ROOT)
    wall = time.perf_counter() - t0
    err = proc.stderr.decode()
    if proc.returncode:
        raise SystemExit(f"{' '.join(args)[:200]} failed:\n{err[-2000:]}")
    peak_kb = float(err.rsplit("PEAK_KB", 1)[1].split()[0])
    return wall, peak_kb / 1024**2, proc.stdout.decode()


def base_run(args: argparse.Namespace, work: Path) -> Path:
    if args.base:
        return Path(args.base)
    out = work / "base"
    subprocess.run([sys.executable, "-m", "asc", "eval", "--model", args.model, "--corpus", "humaneval", "--limit", "40", "--out", str(out),
                    "--quiet", "--n-boot", "50"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return out


def renamed_copy(run: Path, out: Path, model: str) -> Path:
    """A hard-linked copy of ``run`` whose meta.json names another model (parts shared, nothing rewritten)."""
    shutil.copytree(run, out, copy_function=os.link)
    meta_path = out / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["settings"]["model"]["name"] = model
    meta_path.unlink()  # a link: write a new file, leave the original's meta alone
    meta_path.write_text(json.dumps(meta, indent=2))
    return out


def fmt(wall: float, peak: float) -> str:
    return f"{wall:7.2f} s  {peak:5.2f} GB peak"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated snippet counts")
    ap.add_argument("--base", default=None, help="a real run folder to copy (default: 40 HumanEval snippets, made here)")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--work", default=None, help="where the run folders go (kept); default: a temporary folder")
    ap.add_argument("--skip", default="", help="comma-separated steps to skip: compare,node,page,causal,ten")
    args = ap.parse_args()

    from benchmarks.synthetic_runs import make_run

    skip = set(filter(None, args.skip.split(",")))
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = None if args.work else tempfile.mkdtemp(prefix="asc-bench-corpus-")
    work = Path(args.work or tmp)
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, dict[int, tuple[float, float]]] = {}
    try:
        base = base_run(args, work)
        print(f"base run: {base}\n")
        for n in sizes:
            run = work / f"runs-{n}" / "run"
            if not run.exists():
                t0 = time.perf_counter()
                make_run(base, n, run)
                print(f"{n:>9,} snippets: run folder written in {time.perf_counter() - t0:.0f} s")
            steps = {
                "compare (snippet bootstrap)": ("compare", ["compare", str(run), "--n-boot", "500"]),
                "compare (node bootstrap)": ("node", ["compare", str(run), "--n-boot", "500", "--bootstrap", "node"]),
                "causal": ("causal", ["causal", str(run), "--out", str(work / f"causal-{n}.csv"), "--quiet"]),
            }
            for name, (key, cmd) in steps.items():
                if key in skip or (key == "causal" and n > 100_000):
                    continue
                wall, peak, _ = measured(cmd)
                results.setdefault(name, {})[n] = (wall, peak)
                print(f"{n:>9,}  {name:<30} {fmt(wall, peak)}")
            if "page" not in skip and n <= 100_000:
                wall, peak, out = measured(["-c", PAGE_CHILD, str(ROOT)],
                                           env={"ASC_RUNS_DIR": str(run.parent)})
                render, imports = (float(x) for x in out.split("RESULT")[1].split())
                results.setdefault("global page (first render)", {})[n] = (render, peak)
                print(f"{n:>9,}  {'global page (first render)':<30} {fmt(render, peak)}  (imports {imports:.1f} s, "
                      f"process {wall:.1f} s)")
        largest = max((n for n in sizes if n <= 100_000), default=0)
        if "ten" not in skip and largest:
            src = work / f"runs-{largest}" / "run"
            copies = [renamed_copy(src, work / f"ten-{largest}" / f"model-{k}", f"model-{k}") if not
                      (work / f"ten-{largest}" / f"model-{k}").exists() else work / f"ten-{largest}" / f"model-{k}"
                      for k in range(10)]
            wall, peak, _ = measured(["compare", *map(str, copies), "--n-boot", "500"])
            print(f"\nten models x {largest:,} snippets, compare side by side: {fmt(wall, peak)} (target <= 30 s)")
        if len(sizes) >= 2 and largest:
            small, big = min(sizes), largest
            print(f"\ngrowth {small:,} -> {big:,} snippets (x{big / small:.0f} data):")
            for name, by_size in results.items():
                if small in by_size and big in by_size:
                    print(f"  {name:<30} x{by_size[big][0] / by_size[small][0]:.1f} time")
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
