"""benchmarks/bench_corpus_attribution.py runs end to end on the tiny model with tiny sizes (make bench runs it on
SmolLM2), so it cannot rot: it prints the ratio and the intervals by k and writes them as figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.report import read
from tests.helpers import ROOT


def test_the_benchmark_reports_the_ratio_and_the_widths(tmp_path: Path):
    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"s{i}", "code": f"def f{i}(x):\n    if x > {i}:\n        return "
                                                                  f"[x, {i}]\n    return x\n"}) for i in range(3)))
    out = tmp_path / "bench.txt"
    proc = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_corpus_attribution.py"), "--model",
                           "tiny-random", "--corpus", str(corpus), "--snippets", "3", "--k", "3", "--n-boot", "20",
                           "--out", str(out)], capture_output=True, text=True, timeout=600, check=False,
                          env={**os.environ, "PYTHONPATH": str(ROOT)}, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr[-3000:]
    bench = read(out)
    assert float(bench.figures["sweep_x_k_grad"]) >= 1.0  # the sweep includes its own passes
    assert float(bench.figures["sweep_x_ref"]) > 0
    assert {"width_k1", "width_k2", "width_k3"} <= set(bench.figures)
    assert "k = 3: 9 targets" in "\n".join(bench.sections["main"])
