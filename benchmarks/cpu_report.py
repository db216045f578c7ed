"""``bench_pipeline.py --cpu-side``: the CPU side of a corpus run, this checkout against another commit's, interleaved.

Each measured setup is a child process of ``benchmarks/cpu_side.py`` (its module doc: what is timed) that stays
up for every round: this checkout in one process (``cpu_workers=0``) and with a pool of 1 to ``cores`` worker
processes (started anew by each run, as a run starts them: their start is part of the time), and with ``against``
a checkout of that commit (``git archive REV | tar -x`` into a temporary folder, its ``asc`` on ``PYTHONPATH``). A
round asks every child for one run, in an order rotated from round to round so each meets the machine's noise alike;
the figures are medians over the rounds, the ratio against the old commit the median of the per-round ratios.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.report import ROOT, Report

TARGET = 3.0  # the CPU side in one process, against bb5a099's (issue 46)


class Child:
    """One ``cpu_side.py`` process: ``run(workers)`` times one corpus run in it."""

    def __init__(self, name: str, path: Path, limit: int | None, batch_size: int) -> None:
        env = os.environ | {"PYTHONPATH": str(path), "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false"}
        cmd = [sys.executable, str(ROOT / "benchmarks" / "cpu_side.py"), "--batch-size", str(batch_size)]
        self.name = name
        self.proc = subprocess.Popen(cmd + (["--limit", str(limit)] if limit else []), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, cwd=path, env=env)
        self.info = self._answer()

    def _answer(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            if line.startswith("{"):
                return json.loads(line)
        raise SystemExit(f"{self.name}: cpu_side.py ended without an answer (exit {self.proc.wait()})")

    def run(self, workers: int) -> float:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"run {workers}\n")
        self.proc.stdin.flush()
        return float(self._answer()["seconds"])

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        self.proc.wait()


def checkout(rev: str, folder: Path) -> Path:
    """The tracked files of ``rev`` in ``folder`` (``git archive``)."""
    with tempfile.TemporaryFile() as tar:
        subprocess.run(["git", "archive", rev], cwd=ROOT, stdout=tar, check=True)
        tar.seek(0)
        with tarfile.open(fileobj=tar) as archive:
            archive.extractall(folder, filter="data")
    return folder


def cpu_side_report(against: str | None, rounds: int, limit: int | None, batch_size: int) -> None:
    cores = os.cpu_count() or 1
    report = Report("pipeline_cpu", "the CPU side of a corpus run (no forward pass), tokens/s, against an older commit")
    with tempfile.TemporaryDirectory(prefix="asc-bench-old-") as tmp:
        setups: list[tuple[str, Child, int]] = []
        new = Child("this checkout", ROOT, limit, batch_size)
        setups.append(("one process", new, 0))
        setups += [(f"pool of {w}", new, w) for w in range(1, cores + 1)]
        old = None
        if against:
            old = Child(against, checkout(against, Path(tmp)), limit, batch_size)
            setups.insert(0, (f"{against}, one process", old, 0))
        times: dict[str, list[float]] = {name: [] for name, _, _ in setups}
        try:
            for _name, child, workers in setups:  # warm-up: first-call caches
                child.run(workers)
            for r in range(rounds):
                for name, child, workers in setups[r % len(setups):] + setups[: r % len(setups)]:
                    times[name].append(child.run(workers))
        finally:
            new.close()
            if old is not None:
                old.close()
    tokens, n = new.info["tokens"], new.info["snippets"]
    r = report.figure
    report.section("cpu_side")
    report.line(f"corpus: {r('snippets', n)} functions (HumanEval and `algorithms`, the GPU report's), "
                f"{r('tokens', tokens)} tokens, chunks of {batch_size}; {rounds} interleaved rounds (medians); the model's "
                f"statistics precomputed (no forward pass timed); {cores} cores")
    one = statistics.median(times["one process"])
    if old is not None:
        base = statistics.median(times[f"{against}, one process"])
        ratios = sorted(a / b for a, b in zip(times[f"{against}, one process"], times["one process"], strict=True))
        report.line(f"{against}, one process : {r('old_s', base, '6.2f')} s  {r('old_tokens_per_s', tokens / base, '8.0f')} "
                    "tokens/s")
    report.line(f"one process          : {r('one_s', one, '6.2f')} s  {r('one_tokens_per_s', tokens / one, '8.0f')} tokens/s")
    for w in range(1, cores + 1):
        t = statistics.median(times[f"pool of {w}"])
        report.line(f"pool of {w} worker{'s' if w > 1 else ' '}     : {r(f'pool{w}_s', t, '6.2f')} s  "
                    f"{r(f'pool{w}_tokens_per_s', tokens / t, '8.0f')} tokens/s  speed-up over one process "
                    f"{r(f'pool{w}_speedup', one / t, '.2f')}x (worker start included)")
    if old is not None:
        report.line(f"ratio, one process   : {r('ratio', statistics.median(ratios), '6.2f')}x {against}'s (median of "
                    f"per-round ratios, range {r('ratio_low', ratios[0], '.2f')}-{r('ratio_high', ratios[-1], '.2f')}; "
                    f"target >= {TARGET:.0f}x)")
    report.write()
