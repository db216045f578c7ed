"""The GPU report's script (benchmarks/gpu/run.sh) runs end to end on the CPU with tiny sizes (``--dry``), so it
cannot rot while no GPU is there: every section runs and reports, and the report names device, date and commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.gpu.report import SECTIONS
from tests.helpers import ROOT


@pytest.mark.slow
def test_the_dry_run_reports_every_section(tmp_path: Path):
    bench_files = {p: p.read_bytes() for p in (ROOT / "docs" / "bench").glob("*.txt")}
    scratch = tmp_path / "tmp"  # the report's own temporary folder goes here, and is removed at its end
    scratch.mkdir()
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable, "TMPDIR": str(scratch)}
    proc = subprocess.run([str(ROOT / "benchmarks" / "gpu" / "run.sh"), "--dry"], capture_output=True, text=True,
                          env=env, timeout=900, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads((tmp_path / "gpu-report.json").read_text())
    assert [s["section"] for s in report["sections"]] == [name for name, _, _ in SECTIONS]
    broken = {s["section"]: s.get("tail", "")[-800:] for s in report["sections"] if s["status"] != "ok"}
    assert not broken, broken
    text = (tmp_path / "gpu-report.md").read_text()
    assert text.startswith("# GPU report (dry run on the CPU, tiny sizes)")
    assert "- device: CPU" in text and f"- commit: {report['stamp']['commit']}" in text
    assert "| next-token statistics at a 262k vocabulary, tokens/s |" not in text  # the dry run measures 4k only
    assert "| smollm2-135m: pipeline speed / bare speed |" in text and "## placement: ok" in text
    assert "OOM halving" in text and "halved" in text
    assert "every section ran" in proc.stdout
    assert not list(scratch.glob("asc-gpu-report-*")), "the scratch folder (models, runs) is removed"
    # the benchmarks it runs write their files into the run's scratch folder, never over make bench's figures
    assert {p: p.read_bytes() for p in (ROOT / "docs" / "bench").glob("*.txt")} == bench_files


@pytest.mark.parametrize("fork", [True, False], ids=["forked (dry runs)", "fresh interpreters (the GPU's way)"])
def test_a_failing_section_is_reported_and_the_rest_run(tmp_path: Path, monkeypatch, fork: bool):
    from benchmarks.gpu import report

    run_section = report.run_section
    monkeypatch.setattr(report, "run_section", lambda *a: run_section(*a, fork=fork))
    monkeypatch.setattr(report, "SECTIONS", (("environment", 60, 1), ("nonexistent", 60, 1), ("environment", 60, 1)))
    monkeypatch.setattr(sys, "argv", ["report.py", "--out", str(tmp_path), "--dry"])
    report.main()
    got = json.loads((tmp_path / "gpu-report.json").read_text())
    assert [s["status"] for s in got["sections"]] == ["ok", "failed", "ok"]
    assert "invalid choice: 'nonexistent'" in got["sections"][1]["tail"]
    assert "## nonexistent: failed" in (tmp_path / "gpu-report.md").read_text()
