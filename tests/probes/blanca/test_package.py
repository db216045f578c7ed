"""BLANCA's H and U about a named package (probes.blanca.build with ``packages``): a task set of its own whose pairs
are all of the package's own classes (networkx, installed with the project), and a one-line refusal where a package
is too small for a task (PyYAML, more-itertools)."""

from __future__ import annotations

from pathlib import Path

import pytest

from asc.errors import CorpusError
from probes.blanca.build import MIN_TEST_PAIRS, blanca_set_name, build_task_set
from probes.blanca.classes import scan_classes
from probes.cli import main


@pytest.fixture(scope="module")
def networkx_set(tmp_path_factory):
    return build_task_set(tmp_path_factory.mktemp("nx"), ["H", "U"], packages=["networkx"], import_packages=True)


def test_a_named_package_has_a_set_of_its_own(networkx_set):
    assert networkx_set.name == blanca_set_name(["networkx"]) == "package-networkx-seed0"
    for task in ("H", "U"):
        assert networkx_set.headers[task]["provenance"]["classes_of"] == ["networkx"]


@pytest.mark.parametrize("task", ["H", "U"])
def test_every_pair_is_of_the_package_s_own_classes(networkx_set, task):
    items = networkx_set.items[task]
    defined = {c.name for c in scan_classes([], packages=["networkx"], import_packages=True).classes
               if c.cls.__module__.split(".")[0] == "networkx"}
    assert all(it.name_a in defined and it.name_b in defined for it in items)
    train, test = networkx_set.counts()[task]
    assert test >= MIN_TEST_PAIRS and train > test  # enough for Pearson's r on the test split
    assert len({n for it in items for n in (it.name_a, it.name_b)}) >= 10
    if task == "H":
        assert len({it.target for it in items}) >= 3  # balanced over several MRO distances
    else:
        assert {it.target == 0 for it in items} == {True, False}  # pairs that share methods and pairs that do not


def test_the_sizes_say_whose_classes(networkx_set):
    lines = networkx_set.size_lines()
    assert any(line.startswith("H: ") and line.endswith("test; classes of networkx)") for line in lines)


@pytest.mark.parametrize("package, task", [("yaml", "H"), ("yaml", "U"), ("more_itertools", "H"),
                                           ("more_itertools", "U")])
def test_a_package_too_small_for_a_task_is_refused_with_its_counts(tmp_path: Path, package, task):
    with pytest.raises(CorpusError, match=rf"--package {package} is too small for {task}: \d+ of its \d+ classes "
                       rf".* needs {MIN_TEST_PAIRS} test pairs or more .* leave {task} out of --tasks"):
        build_task_set(tmp_path, [task], packages=[package], import_packages=True)
    assert not list(tmp_path.rglob(f"{task}.jsonl"))


def test_the_command_line_refuses_in_one_line(tmp_path: Path, capsys):
    assert main(["blanca", "--tasks", "H", "--package", "yaml", "--import-packages", "--out", str(tmp_path),
                 "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--package yaml is too small for H" in err
