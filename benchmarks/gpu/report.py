"""The GPU report's driver: runs each section of ``sections.py`` in its own process under a time limit and writes
``gpu-report.json`` and ``gpu-report.md`` into ``--out`` after every section, so a run cut short still leaves
what it measured.

A section that fails or runs out of time is recorded as such (with the end of its output) and the next one runs:
one broken measurement never costs the rest of a GPU lease. ``--deadline`` bounds the whole run (the device
machine allows 10 minutes a command); sections are skipped, and say so, when less time is left than they need.
``--dry`` runs every section on the CPU with tiny sizes (``make gpu-report-dry``, run by ``make test``), each in a
child forked from the driver, which imported torch and transformers once (:mod:`benchmarks.gpu.child`); on the GPU
each section starts a fresh interpreter. ``test_a_failing_section_is_reported_and_the_rest_run`` runs both ways.
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.gpu import child  # noqa: E402

# (section, seconds it may take on the GPU, seconds it needs at least to be worth starting)
SECTIONS: tuple[tuple[str, int, int], ...] = (
    ("environment", 60, 5),
    ("stats", 90, 20),
    ("pipeline", 260, 40),
    ("pytest", 150, 30),
    ("placement", 90, 20),
    ("half", 60, 15),
    ("eval", 90, 20),
    ("lens_branch", 120, 20),
)


def stamp() -> dict[str, Any]:
    """The commit the bundle was made from (``.gpu/stamp.json``), else git's, else unknown."""
    path = ROOT / ".gpu" / "stamp.json"
    if path.is_file():
        return json.loads(path.read_text())
    proc = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    return {"commit": proc.stdout.strip() or "unknown", "dirty": None}


def run_section(name: str, limit: float, work: Path, dry: bool, fork: bool | None = None) -> dict[str, Any]:
    """Run one section of ``sections.py`` under ``limit`` seconds. ``fork`` (default: ``dry``): in a child forked
    from this process, which imported torch and transformers once, instead of a fresh interpreter
    (:mod:`benchmarks.gpu.child`; the GPU run keeps fresh interpreters)."""
    result_file = work / f"{name}.json"
    argv = [str(HERE / "sections.py"), name, "--json", str(result_file), "--work", str(work)] + (["--dry"] if dry else [])
    fork = dry if fork is None else fork
    if fork:
        child.preload()
    t0 = time.perf_counter()
    stdout, stderr, code = child.python(argv, fork=fork, timeout=limit)
    output = stdout + stderr
    seconds = round(time.perf_counter() - t0, 1)
    result: dict[str, Any] = json.loads(result_file.read_text()) if result_file.is_file() else {}
    status = "timed out" if code is None else ("ok" if code == 0 and result else "failed")
    result.update(section=name, status=status, seconds=seconds)
    if status != "ok":
        result["tail"] = output[-3000:]
    return result


def markdown(report: dict[str, Any]) -> str:
    env = report["environment"]
    lines = [f"# GPU report ({'dry run on the CPU, tiny sizes' if report['dry'] else 'measured'})", "",
             f"- device: {env.get('device', '?')}", f"- date: {report['date']}",
             f"- commit: {report['stamp'].get('commit')}{' (with uncommitted changes)' if report['stamp'].get('dirty') else ''}",
             f"- software: {env.get('software', '?')}", f"- made by `benchmarks/gpu/run.sh` in {report['seconds']:.0f} s", ""]
    targets = [t for s in report["sections"] for t in s.get("targets", [])]
    if targets:
        lines += ["## Targets", "", "| measure | value | target | met |", "| --- | --- | --- | --- |"]
        lines += [f"| {t['name']} | {t['value']} | {t['target']} | {'yes' if t['met'] else 'no'} |" for t in targets]
        lines.append("")
    for s in report["sections"]:
        lines += [f"## {s['section']}: {s['status']} ({s['seconds']} s)", ""]
        lines += s.get("lines", [])
        if s.get("tail"):
            lines += ["", "```", s["tail"][-1500:], "```"]
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, required=True, help="folder for gpu-report.md and gpu-report.json")
    ap.add_argument("--deadline", type=float, default=540, help="seconds the whole run may take (default 540)")
    ap.add_argument("--dry", action="store_true", help="on the CPU with tiny sizes: checks the script, not the GPU")
    ap.add_argument("--only", help="comma-separated sections to run (default: all)")
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="asc-gpu-report-") as scratch:  # models and runs: not sent back, and
        work = Path(scratch)  # removed at the end (a dry run in every `make test` left its folders in /tmp)
        t0 = time.perf_counter()
        wanted = set(args.only.split(",")) if args.only else {name for name, _, _ in SECTIONS}
        report: dict[str, Any] = {"dry": args.dry, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                                  "stamp": stamp(), "host": platform.node(), "sections": [], "environment": {}}
        for name, limit, least in SECTIONS:
            if name not in wanted:
                continue
            left = args.deadline - (time.perf_counter() - t0)
            if left < least:
                report["sections"].append({"section": name, "status": f"skipped ({left:.0f} s left)", "seconds": 0})
                continue
            print(f"[{time.perf_counter() - t0:5.0f} s] {name} ...", flush=True)
            result = run_section(name, min(limit, left), work, args.dry)
            print(f"[{time.perf_counter() - t0:5.0f} s] {name}: {result['status']}", flush=True)
            if name == "environment":
                report["environment"] = result.get("figures", {})
            report["sections"].append(result)
            report["seconds"] = time.perf_counter() - t0
            (args.out / "gpu-report.json").write_text(json.dumps(report, indent=2))
            (args.out / "gpu-report.md").write_text(markdown(report))
        failed = [s["section"] for s in report["sections"] if s["status"] not in ("ok",) and "skipped" not in s["status"]]
        print(f"report: {args.out / 'gpu-report.md'}; " + (f"failed: {', '.join(failed)}" if failed else "every section ran"))


if __name__ == "__main__":
    main()
