"""benchmarks/bench_table2_plan.py lays the estimated work of Table 2 over the GPU commands: one part carried per
command, a model's work from the command that brings its last part, at most the command's seconds each, in the
order the GPU command runs it (a cell split between commands says how much each did)."""

from __future__ import annotations

import re

from benchmarks.bench_table2_plan import schedule


def test_the_plan_waits_for_the_weights_and_fills_each_command():
    sizes = [("site.tar.xz", 10), ("tasks.tar.xz", 5), ("a.gguf", 30), ("b.gguf", 40)]  # parts of 30: a in 2, b in 3
    cells = [{"model": "a", "level": "function", "task": "X", "gpu_s": 50.0},
             {"model": "a", "level": "file", "task": "Y", "gpu_s": 30.0},
             {"model": "b", "level": "function", "task": "X", "gpu_s": 100.0}]
    lines = [re.fullmatch(r"command +(\d+) carries (\.gpu-part\d+|nothing new) +(.*)", x).groups()
             for x in schedule(cells, sizes, 30, 60)]
    assert [work.strip() for _, _, work in lines] == [
        "waits for the parts",
        "60 s: a function: X; a file: Y 33%",
        "60 s: a file: Y 67%; b function: X 40%",
        "60 s: b function: X 60%",
    ]
    assert [(n, carry) for n, carry, _ in lines] == [("1", ".gpu-part1"), ("2", ".gpu-part2"), ("3", ".gpu-part3"),
                                                     ("4", "nothing new")]
