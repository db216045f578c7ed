"""glueCode on one package's own code (probes.gluecode.splits): a folder that is one package (the real more-itertools
source folder) gives every buildable task with a dev and a test split, split by file or top-level definition; a
folder too small for two splits is refused in one line; NULL splits a one-package folder too."""

from __future__ import annotations

import contextlib
import io
import re
import textwrap
import time
from collections import Counter
from pathlib import Path

import more_itertools
import numpy as np
import pytest

from asc.errors import CorpusError
from probes.cli import main
from probes.gluecode.build import TASK_CLASSES, build_task_sets, class_of
from probes.gluecode.items import NO_WARNING, OPERATORS, SPLITS, load_items
from probes.gluecode.nulltoken import null_items
from probes.gluecode.runs import set_name
from probes.gluecode.splits import FINER_LEVELS, assign_units, definition_of

MORE = Path(more_itertools.__file__).parent  # __init__.py, more.py, recipes.py: one package
BUILDABLE = ["NPATH", "OPS", "NAME", "CALL"]


@pytest.fixture(scope="module")
def more_cli(tmp_path_factory) -> tuple[int, str, Path]:
    """``python -m probes gluecode --tasks NPATH,OPS,NAME,CALL --corpus <more_itertools> --size 120`` (no model: the
    tasks and the baselines, which need both splits)."""
    out = tmp_path_factory.mktemp("more")
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = main(["gluecode", "--tasks", ",".join(BUILDABLE), "--corpus", str(MORE), "--size", "120",
                     "--context", "function", "--out", str(out), "--quiet"])
    return code, text.getvalue(), out / "tasks" / set_name(str(MORE), 120, 0)


def test_the_real_package_is_one_package():
    sets = build_task_sets(["NAME"], str(MORE), size=24, seed=0, contexts=False)
    assert {it.meta["package"] for it in sets["NAME"][0]} == {"more_itertools"}


@pytest.mark.parametrize("task", BUILDABLE)
def test_every_task_of_a_one_package_folder_has_both_splits(more_cli, task):
    code, text, folder = more_cli
    assert code == 0, text
    header, items = load_items(folder / f"{task}.jsonl")
    level = header["provenance"]["build"]["split_by"]
    assert level in FINER_LEVELS
    assert f"{task}: {len(items)} items (dev {len(items) // 2}, test {len(items) // 2}, split by {level})" in text
    classes = TASK_CLASSES[task]
    for split in SPLITS:  # every class in both splits, balanced
        counts = Counter(class_of(it) for it in items if it.split == split)
        assert set(counts) == set(classes) and len(set(counts.values())) == 1, (split, counts)
    units = {s: {it.meta["unit"] for it in items if it.split == s} for s in SPLITS}
    assert units["dev"] and units["test"] and not units["dev"] & units["test"]
    assert all(it.meta["split_by"] == level and it.meta["package"] == "more_itertools" for it in items)
    if level == "definition":
        for it in items:
            path, name = it.meta["unit"].split("::")
            text = (MORE / path).read_text(encoding="utf-8")
            assert re.search(rf"^\s*(def|class) {name}\b", text, re.MULTILINE), it.meta["unit"]
    if task in ("NAME", "CALL"):  # plenty of names and calls: the full set
        assert len(items) == 120


def test_the_baselines_are_fitted_on_dev_and_scored_on_test(more_cli):
    code, text, _ = more_cli
    assert code == 0 and "no dev items" not in text
    table = text.split("Trivial baselines (fitted on dev, scored on test):", 1)[1]
    assert all(task in table for task in BUILDABLE)


def test_the_finer_split_is_seeded():
    def units(seed: int) -> dict[str, str]:
        items = build_task_sets(["NPATH"], str(MORE), size=24, seed=seed, contexts=False)["NPATH"][0]
        assert items[0].meta["split_by"] == "definition"  # 2 files cannot give NPath 16-20 to both splits
        return {it.meta["unit"]: it.split for it in items}

    assert units(0) == units(0)
    assert len({tuple(sorted(units(seed).items())) for seed in range(3)}) > 1


def test_a_class_held_by_two_units_goes_to_both_splits():
    units = ["a", "a", "b", "c", "d", "e", "f"]
    classes_of = [{"x", "y"}, {"y"}, {"y"}, {"rare"}, {"y"}, {"rare", "y"}, {"y"}]
    for seed in range(20):
        dealt = assign_units(units, classes_of, ("x", "y", "rare"), np.random.default_rng(seed))
        assert {dealt["c"], dealt["e"]} == {"dev", "test"}  # the rare class's two units
        assert set(dealt) == set(units) and Counter(dealt.values())["dev"] in (2, 3, 4)


def test_a_method_belongs_to_its_class_definition(tmp_path):
    (tmp_path / "m.py").write_text("import x\n\n@x.deco\nclass Box:\n    def put(self):\n        return 1\n\n"
                                   "def free():\n    return 2\n")
    from probes.gluecode.callgraph import CorpusFiles

    files = CorpusFiles(tmp_path)
    assert definition_of(files, "m.py", 5, "put") == "m.py::Box"
    assert definition_of(files, "m.py", 3, "Box") == "m.py::Box"  # the decorator's line
    assert definition_of(files, "m.py", 8, "free") == "m.py::free"
    assert definition_of(files, "gone.py", 1, "f") == "gone.py::f"


def _one_class_package(root: Path) -> Path:
    """A package whose every function is a method of one class: one top-level definition, no split possible."""
    pkg = root / "tiny_pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    methods = "\n".join(f"    def op_{i}(self, a, b):\n        print(a)\n        print(b)\n        print(a, b)\n"
                        f"        return a {op} b\n" if op != "=" else f"    def op_{i}(self, a, b):\n        print(a)\n"
                        f"        print(b)\n        a = b\n        return a\n" for i, op in enumerate(OPERATORS))
    (pkg / "ops.py").write_text(f"class Ops:\n{methods}")
    return pkg


def test_a_folder_too_small_for_two_splits_is_one_line(tmp_path, capsys):
    pkg = _one_class_package(tmp_path)
    with pytest.raises(CorpusError, match=r"too small for a dev and a test split: 12 functions .* in 1 files; "
                       r"each of the 12 classes needs functions in at least 2 units"):
        build_task_sets(["OPS"], str(pkg), size=24, seed=0)
    assert main(["gluecode", "--tasks", "OPS", "--corpus", str(pkg), "--size", "24", "--out",
                 str(tmp_path / "o"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "too small" in err and "bigger folder" in err


NULL_MODULE = '''\
import re
from typing import Optional


def first_word_{k}(text):
    m = re.match(r"\\w+", text)
    return m.group(0)


def plus_one_{k}(n: Optional[int]) -> int:
    return n + 1


def shout_{k}(text: str) -> str:
    return text.upper() + "!"
'''


def test_null_splits_a_one_package_folder(tmp_path):
    pkg = tmp_path / "nullpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    for k in range(3):
        (pkg / f"part{k}.py").write_text(textwrap.dedent(NULL_MODULE.format(k=k)))
    items, prov = null_items(str(pkg), size=100, seed=0, workdir=tmp_path / "work", min_lines=1)
    assert {it.meta["package"] for it in items} == {"nullpkg"}  # one package: the package split has one side
    assert prov["split_by"] in FINER_LEVELS and prov["per_split"]["dev"] and prov["per_split"]["test"]
    units = {s: {it.meta["unit"] for it in items if it.split == s} for s in SPLITS}
    assert not units["dev"] & units["test"]
    assert any(it.label != NO_WARNING for it in items if it.split == "test")  # stratified: warnings in test


@pytest.mark.real
def test_the_issue_command_on_more_itertools_with_smollm2(tmp_path, capsys):
    """The issue's command (OPS, function level) with SmolLM2, at --size 24 instead of 120 (12 test items instead
    of 36) to keep the test short."""
    start = time.perf_counter()
    code = main(["gluecode", "--model", "smollm2-135m", "--tasks", "OPS", "--corpus", str(MORE), "--context",
                 "function", "--size", "24", "--out", str(tmp_path / "x"), "--quiet"])
    text = capsys.readouterr().out
    assert code == 0, text
    assert "OPS: 24 items (dev 12, test 12, split by " in text and "smollm2-135m" in text
    assert "most frequent operator" in text and "no dev items" not in text
    print(f"seconds: {time.perf_counter() - start:.1f}")
