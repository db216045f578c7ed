"""benchmarks/bench_demos.py runs end to end on the tiny model (make bench runs it on SmolLM2 and MiniLM), so it
cannot rot: each demo is submitted as the app submits it and timed, and ui.jobs reads the buttons' minutes back."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.report import read
from tests.helpers import ROOT
from ui import jobs


@pytest.mark.slow
def test_the_benchmark_times_the_demos_and_counts_what_the_causal_demo_estimates(tmp_path: Path):
    out = tmp_path / "demos.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ASC_MODEL": "tiny-random"}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_demos.py"), "--demo", "eval", "--demo",
                           "causal", "--out", str(out)], capture_output=True, text=True, timeout=900, check=False,
                          env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    bench = read(out)
    assert {"eval", "causal"} <= set(bench.sections)
    assert float(bench.figures["causal_s"]) >= float(bench.figures["causal_run_s"]) > 0  # the run, then Table II
    assert int(bench.figures["causal_estimated"]) > int(bench.figures["causal_estimated_small"])
    assert int(bench.figures["causal_categories"]) >= 5  # all of HumanEval: most categories reach the minimum
    minutes = jobs.demo_minutes(out)
    assert minutes["eval"] == jobs.promised_minutes(float(bench.figures["eval_s"]))
    assert minutes["layers"] == jobs.DEMO_UNMEASURED  # not run here
    assert "No runtime found" not in proc.stderr
