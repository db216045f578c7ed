"""A small hand-made BLANCA task set (every task, both splits) written where a run folder expects it."""

from __future__ import annotations

from pathlib import Path

import pytest

from probes.blanca.build import blanca_set_name
from probes.blanca.items import PairItem, RankItem, ScoredPairItem, save_items

DOCS = ["A double-ended queue with fast appends and pops on either end.",
        "A dictionary subclass that counts hashable objects.",
        "Read and write ZIP archives.",
        "An ordered mapping that remembers insertion order.",
        "Decimal fixed point and floating point arithmetic.",
        "A thread pool that runs callables asynchronously.",
        "Parse command-line options and arguments.",
        "Compress and decompress data with zlib."]


def small_items() -> dict[str, list]:
    """Six to twelve items per task, train and test, texts drawn from :data:`DOCS`."""
    r = [RankItem(f"R/{i}", "test" if i % 2 else "train", f"What gives me this: {DOCS[i].lower()}",
                  (DOCS[i], DOCS[(i + 1) % 8], DOCS[(i + 2) % 8]), (1.0, 0.0, 0.0)) for i in range(6)]
    pairs = []
    for task in ("L", "F"):
        for i in range(8):
            split = "test" if i % 2 else "train"
            pairs.append(PairItem(task, f"{task}/{i}+", split, f"About {DOCS[i]}", DOCS[i], True, f"g{i}", "q", "pos"))
            pairs.append(PairItem(task, f"{task}/{i}-", split, f"About {DOCS[i]}", DOCS[(i + 3) % 8], False, f"g{i}",
                                  "q", "neg"))
    scored = []
    for task in ("H", "U"):
        for i in range(12):
            a, b = i % 8, (i * 3 + 1) % 8
            target = float(1 + i % 4) if task == "H" else round((i % 5) / 4, 2)
            scored.append(ScoredPairItem(task, f"{task}/{i}", "test" if i % 3 == 0 else "train", DOCS[a], DOCS[b],
                                         target, f"m.C{a}", f"m.C{b}"))
    out: dict[str, list] = {"R": r}
    for item in pairs + scored:
        out.setdefault(item.task, []).append(item)
    return out


@pytest.fixture
def small_run(tmp_path: Path) -> Path:
    """A run folder whose ``tasks/stdlib-seed0`` holds the small task set (``build_task_set`` loads it)."""
    folder = tmp_path / "run" / "tasks" / blanca_set_name()
    for task, items in small_items().items():
        save_items(folder / f"{task}.jsonl", task, items, {"source": "tests"})
    return tmp_path / "run"
