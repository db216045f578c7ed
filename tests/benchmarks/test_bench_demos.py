"""benchmarks/bench_demos.py runs end to end on the tiny model (make bench runs it on SmolLM2 and MiniLM), so it
cannot rot: a demo is submitted as the app submits it and timed, and ui.jobs reads the buttons' minutes back.

The Global page's demo runs here; the Causal page's (all of HumanEval, then Table II) is the same queue job with a
larger limit, and tests/pages/test_demos.py runs it through the page, so it is not run twice."""

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
def test_the_benchmark_times_a_demo_and_the_buttons_read_its_minutes(tmp_path: Path):
    out = tmp_path / "demos.txt"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ASC_MODEL": "tiny-random"}
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_demos.py"), "--demo", "eval", "--out",
                           str(out)], capture_output=True, text=True, timeout=900, check=False, env=env, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    bench = read(out)
    assert "eval" in bench.sections and "causal" not in bench.sections and float(bench.figures["eval_s"]) > 0
    minutes = jobs.demo_minutes(out)
    assert minutes["eval"] == jobs.promised_minutes(float(bench.figures["eval_s"]))
    assert minutes["causal"] == minutes["layers"] == jobs.DEMO_UNMEASURED  # not run here
    assert "No runtime found" not in proc.stderr
