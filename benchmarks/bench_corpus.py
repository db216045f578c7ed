"""`make bench`: whole-corpus summaries at 10,000 and 100,000 snippets (issue 16), time and peak memory.

Builds the run folders the way issue 16's table was measured: a real small run (``--base``, default: 40
HumanEval functions scored by the default model, made here when not given) copied with new snippet ids
(:mod:`benchmarks.synthetic_runs`) to each size in ``--sizes``. For each size, each step runs in a fresh
process (as a user would run it), ``--rounds`` times (the median is reported), with the wall time and the peak
resident memory of that process:

* ``compare``: ``python -m asc compare RUN`` (Table I, every category, 500 resamples; snippet bootstrap, and
  ``--bootstrap node``), target <= 5 s and <= 1 GB at 100,000 snippets (issue 29 aims at 2 s);
* ``global page``: the Global AsC-Eval page's first render in an app process that has shown its first page
  (Streamlit AppTest; the imports of the app's first page, the inspector, and of the page's libraries are done
  before and reported apart: an app pays them once), target <= 3 s at 100,000 snippets;
* ``readers``: reading the largest run's categorized nodes and taking per-category medians, in fresh
  processes: pandas (the ``nodes`` parts), pyarrow (a dataset of the ``nodes`` parts, 4 columns, filtered) and
  the digests with asc's reader (:mod:`asc.corpus.digest`);
* ``ten models``: ``compare`` of ten 100,000-snippet runs side by side (hard-linked copies of the largest run
  under ten model names), target <= 30 s.

The growth from the smallest to the largest size is printed per step. ``--sizes 1000000`` streams a run of a
million snippets (80 million nodes) through ``compare`` (the limit there is 16 GB). ``--against REF`` also runs
compare and the page with the code of git commit REF (unpacked with ``git archive``), interleaved with this
checkout's, and times both snippet bootstraps in one process on the largest run: ratios that hold on a busy
machine. Run folders go to ``--work`` (default: a temporary folder, removed after). Written to
``docs/bench/corpus.txt`` (:mod:`benchmarks.report`); docs/corpora.md quotes it.
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

from benchmarks.report import Report  # noqa: E402  (after the path)

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

PAGE_CHILD = """
import ast, importlib, os, sys, time
root = sys.argv[1]
t0 = time.perf_counter()
from streamlit.testing.v1 import AppTest
import asc.corpus.summary, asc.viz, plotly.graph_objects, pandas  # the page's libraries
tree = ast.parse(open(os.path.join(root, "pages", "inspect.py")).read())
for node in tree.body:  # the imports of the app's first page (the inspector), done before any other page
    if isinstance(node, ast.ImportFrom) and node.module and node.module != "__future__":
        for alias in node.names:
            try:
                importlib.import_module(node.module + "." + alias.name)
            except ImportError:
                importlib.import_module(node.module)
    elif isinstance(node, ast.Import):
        for alias in node.names:
            importlib.import_module(alias.name)
imports = time.perf_counter() - t0
at = AppTest.from_file(os.path.join(root, "pages", "global_eval.py"), default_timeout=600)
t1 = time.perf_counter()
at.run()
render = time.perf_counter() - t1
assert not at.exception and not at.error, (at.exception, [e.value for e in at.error])
assert len(at.dataframe) >= 2, "Table I was not drawn"
print(f"RESULT {render:.3f} {imports:.3f}")
"""

READERS = {  # reading the categorized nodes of a run and taking per-category medians, one fresh process each
    "pandas   (read_parquet per part, concat)": """
import glob, sys, pandas as pd
frames = [pd.read_parquet(f, columns=["category", "value"]) for f in sorted(glob.glob(sys.argv[1] + "/nodes/*.parquet"))]
nodes = pd.concat(frames, ignore_index=True).dropna()
print(len(nodes), nodes.groupby("category")["value"].median().round(3).to_dict())
""",
    "pyarrow  (dataset, 4 columns, filtered)": """
import sys, pyarrow.compute as pc, pyarrow.dataset as ds
table = ds.dataset(sys.argv[1] + "/nodes", format="parquet").to_table(
    columns=["snippet_id", "category", "type", "value"], filter=pc.is_valid(pc.field("category")))
medians = table.group_by("category").aggregate([("value", "approximate_median")])
print(table.num_rows, medians.num_rows)
""",
    "digests  (pyarrow, asc's reader + medians)": """
import sys
from asc.corpus.runs import load_digest
from asc.corpus.summary import difference_table
digest = load_digest(sys.argv[1])
print(digest.n_nodes, len(difference_table(digest, digest)))
""",
}


PEAK = ("import atexit, resource, sys; atexit.register(lambda: print('PEAK_KB', "
        "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)); ")


def measured(args: list[str], env: dict | None = None, root: Path = ROOT) -> tuple[float, float, str]:
    """Run ``python -m asc ARGS`` (or ``python -c CODE ...`` when ``args[0] == "-c"``) in a fresh process in the
    checkout ``root``; (wall seconds, the process's peak RSS in GB, stdout). Fails loudly when the command fails."""
    if args[0] == "-c":
        cmd = [sys.executable, "-c", PEAK + args[1], *args[2:]]
    else:
        code = PEAK + f"sys.argv = ['asc', *{args!r}]; import runpy; runpy.run_module('asc', run_name='__main__')"
        cmd = [sys.executable, "-c", code]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, env={**os.environ, "PYTHONPATH": str(root), **(env or {})},
                          cwd=root)
    wall = time.perf_counter() - t0
    err = proc.stderr.decode()
    if proc.returncode:
        raise SystemExit(f"{' '.join(args)[:200]} failed:\n{err[-2000:]}")
    peak_kb = float(err.rsplit("PEAK_KB", 1)[1].split()[0])
    return wall, peak_kb / 1024**2, proc.stdout.decode()


def base_run(args: argparse.Namespace, work: Path) -> Path:
    if args.base:
        return Path(args.base).resolve()
    out = work / "base"
    subprocess.run([sys.executable, "-m", "asc", "eval", "--model", args.model, "--corpus", "humaneval", "--limit", "40", "--out", str(out),
                    "--quiet", "--n-boot", "50"], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return out


def renamed_copy(run: Path, out: Path, model: str) -> Path:
    """A hard-linked copy of ``run`` whose meta.json names another model (parts shared, nothing rewritten)."""
    if out.exists():
        return out
    shutil.copytree(run, out, copy_function=os.link)
    meta_path = out / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["settings"]["model"]["name"] = model
    meta_path.unlink()  # a link: write a new file, leave the original's meta alone
    meta_path.write_text(json.dumps(meta, indent=2))
    return out


def checkout(ref: str, work: Path) -> Path:
    """The files of git commit ``ref`` unpacked under ``work`` (``git archive``), once."""
    rev = subprocess.run(["git", "rev-parse", "--short", ref], capture_output=True, text=True, cwd=ROOT, check=True)
    out = work / f"code-{rev.stdout.strip()}"
    if not out.exists():
        out.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", ref], capture_output=True, cwd=ROOT, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(out)], input=archive, check=True)
    return out


def step(name: str, run: Path, root: Path = ROOT) -> tuple[float, float]:
    """One fresh-process measurement of step ``name`` on ``run``: (seconds, peak GB). The page's seconds are its
    render's."""
    if name == "page":
        _, peak, out = measured(["-c", PAGE_CHILD, str(root)], env={"ASC_RUNS_DIR": str(run.parent)}, root=root)
        render, imports = (float(x) for x in out.split("RESULT")[1].split())
        PAGE_IMPORTS.append(imports)
        return render, peak
    extra = ["--bootstrap", "node"] if name == "node" else []
    wall, peak, _ = measured(["compare", str(run), "--n-boot", "500", *extra], root=root)
    return wall, peak


PAGE_IMPORTS: list[float] = []
LABELS = {"compare": "compare (snippet bootstrap)", "node": "compare (node bootstrap)",
          "page": "Global page, first render"}


def bootstrap_in_process(run: Path, old_root: Path, rounds: int) -> tuple[float, float]:
    """Median seconds of this checkout's and ``old_root``'s ``cluster_bootstrap`` (500 resamples) on the digest of
    ``run``, interleaved in this process."""
    import importlib.util

    import numpy as np

    from asc.corpus import bootstrap as new
    from asc.corpus.runs import load_digest

    spec = importlib.util.spec_from_file_location("old_bootstrap", old_root / "asc" / "corpus" / "bootstrap.py")
    assert spec is not None and spec.loader is not None
    old = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(old)
    digest = load_digest(run)
    bins = new.bin_of(digest.value)
    times: dict[str, list[float]] = {"old": [], "new": []}
    for _ in range(rounds):
        for key, module in (("old", old), ("new", new)):
            t0 = time.perf_counter()
            module.cluster_bootstrap(digest.snippet, bins, digest.category, len(digest.categories), digest.n_snippets,
                                     n_boot=500, seed=0)
            times[key].append(time.perf_counter() - t0)
    return float(np.median(times["old"])), float(np.median(times["new"]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="10000,100000", help="comma-separated snippet counts")
    ap.add_argument("--base", default=None, help="a real run folder to copy (default: 40 HumanEval snippets, made here)")
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--work", default=None, help="where the run folders go (kept); default: a temporary folder")
    ap.add_argument("--skip", default="", help="comma-separated steps to skip: compare,node,page,readers,ten")
    ap.add_argument("--rounds", type=int, default=3, help="fresh processes per step and size (median reported)")
    ap.add_argument("--against", default=None, help="a git commit whose code is timed too, interleaved")
    ap.add_argument("--out", default=None, help="the file written (default: docs/bench/corpus.txt)")
    args = ap.parse_args()

    import statistics

    from benchmarks.synthetic_runs import make_run

    skip = set(filter(None, args.skip.split(",")))
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = None if args.work else tempfile.mkdtemp(prefix="asc-bench-corpus-")
    work = Path(args.work or tmp).resolve()
    work.mkdir(parents=True, exist_ok=True)
    report = Report("corpus", f"whole-corpus summaries at {', '.join(f'{n:,}' for n in sizes)} snippets: each step a "
                    f"fresh process, median of {args.rounds}; peak: that process's resident memory",
                    out=Path(args.out) if args.out else None)
    fig = report.figure
    results: dict[str, dict[int, float]] = {}
    try:
        base = base_run(args, work)
        report.line(f"base run: {base} (copied with new snippet ids to each size)")
        report.section("table")
        report.line(f"{'snippets':>11}  {'step':<32}{'time':>8}  {'peak':>8}")
        for n in sizes:
            run = work / f"runs-{n}" / "run"
            if not run.exists():
                t0 = time.perf_counter()
                make_run(base, n, run)
                print(f"{n:>9,} snippets: run folder written in {time.perf_counter() - t0:.0f} s", flush=True)
            for key in ("compare", "node", "page"):
                if key in skip or (key == "page" and n > 100_000):
                    continue
                got = [step(key, run) for _ in range(args.rounds)]
                wall, peak = statistics.median(t for t, _ in got), max(p for _, p in got)
                results.setdefault(key, {})[n] = wall
                report.line(f"{n:>11,}  {LABELS[key]:<32}{fig(f'{key}_{n}_s', wall, '8.2f')} s  "
                            f"{fig(f'{key}_{n}_gb', peak, '4.2f')} GB")
        if PAGE_IMPORTS:
            report.line(f"(the page's imports, paid once per app: {fig('page_imports_s', statistics.median(PAGE_IMPORTS), '.1f')} s)")
        largest = max((n for n in sizes if n <= 100_000), default=0)
        if "ten" not in skip and largest:
            src = work / f"runs-{largest}" / "run"
            copies = [renamed_copy(src, work / f"ten-{largest}" / f"model-{k}", f"model-{k}") for k in range(10)]
            wall, peak, _ = measured(["compare", *map(str, copies), "--n-boot", "500"])
            report.line(f"{'10 models x':>11} {largest:,}, compare side by side  {fig('ten_s', wall, '6.2f')} s  "
                        f"{fig('ten_gb', peak, '4.2f')} GB")
        if len(sizes) >= 2 and largest:
            small, big = min(sizes), largest
            report.section("growth")
            report.line(f"growth {small:,} -> {big:,} snippets (x{big / small:.0f} data):")
            for key, by_size in results.items():
                if small in by_size and big in by_size:
                    report.line(f"  {LABELS[key]:<32} x{fig(f'{key}_growth_x', by_size[big] / by_size[small], '.1f')} time")
        if "readers" not in skip and largest:
            run = work / f"runs-{largest}" / "run"
            report.section("readers")
            report.line(f"reading the {largest:,}-snippet run's categorized nodes, medians per category, fresh processes:")
            for k, (label, code) in enumerate(READERS.items()):
                wall, peak, _ = measured(["-c", code, str(run)])
                report.line(f"{label:<44}{fig(f'reader{k}_s', wall, '6.2f')} s  {fig(f'reader{k}_gb', peak, '4.2f')} GB")
        if args.against and largest:
            against(report, args, checkout(args.against, work), work / f"runs-{largest}" / "run", largest)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    report.write()


def against(report: Report, args: argparse.Namespace, old_root: Path, run: Path, n: int) -> None:
    """Old (``old_root``) and new code interleaved on ``run``: compare, page, and the bootstrap in process."""
    import statistics

    fig = report.figure
    report.section("against")
    report.line(f"this checkout against commit {args.against} on {n:,} snippets, {args.rounds} interleaved rounds "
                "(medians; the ratio holds on a busy machine):")
    for key in ("compare", "page"):
        if key in set(args.skip.split(",")):
            continue
        times: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(args.rounds):
            times["old"].append(step(key, run, old_root)[0])
            times["new"].append(step(key, run)[0])
        old, new = statistics.median(times["old"]), statistics.median(times["new"])
        report.line(f"  {LABELS[key]:<32} old {fig(f'against_{key}_old_s', old, '6.2f')} s, new "
                    f"{fig(f'against_{key}_new_s', new, '6.2f')} s, new/old {fig(f'against_{key}_ratio', new / old, '.2f')}")
    old, new = bootstrap_in_process(run, old_root, args.rounds)
    report.line(f"  {'cluster_bootstrap, in process':<32} old {fig('against_bootstrap_old_s', old, '6.2f')} s, new "
                f"{fig('against_bootstrap_new_s', new, '6.2f')} s, new/old {fig('against_bootstrap_ratio', new / old, '.2f')}")


if __name__ == "__main__":
    main()
