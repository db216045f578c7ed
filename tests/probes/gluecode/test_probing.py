"""glueCode's NPATH and NULL as layer probes (probes.gluecode.probing): labels computed independently, balance,
60/20/20 splits by package, determinism, mypy's NULL labels on hand-made packages, and a run through
probes.inspect.runs.run_layers with the tiny model."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from asc.errors import CorpusError, InputError
from probes.gluecode.items import NPATH_BUCKETS, npath_bucket, probe_splits, split_of
from probes.gluecode.probing import NULL_LABELS, PROBE_INFO, probe_task
from probes.inspect.labels import npath
from probes.inspect.runs import load_results, run_layers
from tests.helpers import npath_function

CHAINS = {1: [], 2: [1], 3: [2], 4: [1, 1], 6: [1, 2], 8: [1, 1, 1], 9: [2, 2], 12: [1, 1, 2], 16: [1] * 4,
          24: [1, 1, 1, 2], 32: [1] * 5, 64: [1] * 6}  # NPath value: if/elif chains, one bucket each


PACKAGES = [f"pkg{i}" for i in range(6)]  # equal sizes: 4, 1 and 1 of them fill 60/20/20 (midpoints 7/12, 9/12)


def _write(root: Path, package: str, text: str) -> None:
    (root / package).mkdir(parents=True, exist_ok=True)
    (root / package / "__init__.py").write_text("")
    (root / package / "mod.py").write_text(text)


def _package_of(snippet_id: str) -> str:
    return snippet_id.split("/")[0]  # ids are "<package>/mod.py:<line>"


def _assert_split_by_package(task) -> None:
    splits: dict[str, set[str]] = {}
    for sid, split in zip(task.meta["snippet_ids"], task.split.tolist()):
        splits.setdefault(_package_of(sid), set()).add(split)
    assert all(len(v) == 1 for v in splits.values()), splits  # no package (so no module) in two splits
    assert task.meta["packages_per_split"] == {"tr": 4, "va": 1, "te": 1}
    assert task.meta["per_split"] == {"tr": task.n * 4 // 6, "va": task.n // 6, "te": task.n // 6}


def test_probe_splits_cut_whole_units_near_60_20_20_of_the_samples():
    units = [f"u{i}" for i in range(100)]
    splits = probe_splits(units)
    assert Counter(splits) == {"tr": 60, "va": 20, "te": 20}
    dev = {u for u in units if split_of(u) == "dev"}  # split_of's hash order: glueCode's dev units train the probes
    assert 0 < len(dev) <= 60 and all(s == "tr" for u, s in zip(units, splits) if u in dev)
    units = ["big"] * 50 + [f"u{i}" for i in range(50)]
    splits = probe_splits(units)
    assert len(set(splits[:50])) == 1 and set(splits) == {"tr", "va", "te"}  # a unit is never cut
    assert probe_splits(list(reversed(units))) == list(reversed(splits))  # the order of the samples does not matter
    assert probe_splits([]) == []


@pytest.fixture(scope="module")
def npath_corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("npath_probe")
    for package in PACKAGES:
        _write(root, package, "\n\n".join(npath_function(f"paths_{package}_{v}", chains, v)
                                         for v, chains in CHAINS.items()))
    return root


def test_npath_labels_are_the_buckets_of_the_texts_balanced_and_split_by_package(npath_corpus):
    task = probe_task("NPATH", str(npath_corpus), size=72, seed=0)
    assert task.name == "NPATH" and task.labels == NPATH_BUCKETS and task.n == 72
    assert set(Counter(task.y.tolist()).values()) == {6}  # 12 buckets, 6 functions each
    for text, y in zip(task.texts, task.y.tolist()):
        assert text.startswith("def paths_") and "<MASK>" not in text  # the function, unmasked
        assert task.labels[y] == npath_bucket(npath(text))
    _assert_split_by_package(task)
    meta = task.meta
    assert meta["task"] == "NPATH" and meta["description"] == PROBE_INFO["NPATH"] and meta["corpus"] == str(npath_corpus)
    assert meta["size_requested"] == 72 and meta["seed"] == 0 and meta["per_class"] == {b: 6 for b in NPATH_BUCKETS}
    assert meta["per_split"] == {"tr": 48, "va": 12, "te": 12}


def test_npath_is_deterministic_and_depends_on_the_seed(npath_corpus):
    a = probe_task("NPATH", str(npath_corpus), size=48, seed=0)
    b = probe_task("NPATH", str(npath_corpus), size=48, seed=0)
    c = probe_task("NPATH", str(npath_corpus), size=48, seed=1)
    assert a.digest == b.digest and a.meta["snippet_ids"] == b.meta["snippet_ids"]
    assert c.digest != a.digest
    assert set(Counter(c.y.tolist()).values()) == {4}


def test_a_split_without_a_class_is_warned(npath_corpus, caplog):
    task = probe_task("NPATH", str(npath_corpus), size=48, seed=0)  # 4 per bucket: va or te cannot hold them all
    assert any("has no sample of class" in w for w in task.meta["warnings"]) and "has no sample" in caplog.text


def test_errors_name_the_fix(npath_corpus, tmp_path):
    with pytest.raises(InputError, match="choose NPATH or NULL"):
        probe_task("NPT", str(npath_corpus))
    with pytest.raises(InputError, match="use size >= 24"):
        probe_task("NPATH", str(npath_corpus), size=12)
    one = tmp_path / "one"
    _write(one, "pkg0", "\n\n".join(npath_function(f"f{v}", c, v) for v, c in CHAINS.items()))
    with pytest.raises(CorpusError, match="too small for a dev and a test split.*give a bigger folder"):
        probe_task("NPATH", str(one), size=24)


POSITIVE = '''\
def first_word_{n}(text):
    """The first word of {n}."""
    m = re.match(r"\\w+", text)
    print(text)
    return m.group(0)
'''
TWO_SITES = '''\
def two_matches_{n}(text):
    """Two maybe-None matches."""
    a = re.match(r"\\w+", text)
    b = re.search(r"\\d+", text)
    return a.end() + b.start()
'''
NEGATIVE = '''\
def count_words_{n}(text: str) -> int:
    """Words of {n}."""
    words = text.split()
    total = len(words)
    return total
'''
BORDERLINE = '''\
def maybe_len_{n}(s: Optional[str]) -> int:
    """Neither class: a None-naming diagnostic that is no dereference."""
    n: int = s
    print(n)
    return n
'''


@pytest.fixture(scope="module")
def null_corpus(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("null_probe")
    for package in PACKAGES:
        parts = [POSITIVE.format(n=f"{package}_{i}") for i in range(2)] + [TWO_SITES.format(n=package)]
        parts += [NEGATIVE.format(n=f"{package}_{i}") for i in range(3)] + [BORDERLINE.format(n=package)]
        _write(root, package, "import re\nfrom typing import Optional\n\n\n" + "\n\n".join(parts))
    return root, tmp_path_factory.mktemp("null_work")


def test_null_labels_come_from_mypy_balanced_and_split_by_package(null_corpus):
    root, work = null_corpus
    task = probe_task("NULL", str(root), size=100, seed=0, workdir=work)
    assert task.name == "NULL" and task.labels == NULL_LABELS
    assert task.meta["per_class"] == {"no warning": 18, "warns": 18}  # every flagged function, as many clean ones
    labels = {text.split("(")[0][4:]: task.labels[y] for text, y in zip(task.texts, task.y.tolist())}
    for name, label in labels.items():
        expected = "warns" if name.startswith(("first_word", "two_matches")) else "no warning"
        assert label == expected, name  # m = re.match(...); m.group(0) warns; two sites warn too
    assert not any(name.startswith("maybe_len") for name in labels)  # borderline: in neither class
    assert not any("<MASK>" in t or "possible None" in t for t in task.texts)  # the source, no prompt line
    _assert_split_by_package(task)
    meta = task.meta
    assert meta["checker"] == "mypy" and meta["checker_version"] and "not a proven bug" in meta["label_meaning"]
    assert meta["positives_available"] == 18 and meta["negatives_available"] == 18
    small = probe_task("NULL", str(root), size=20, seed=0, workdir=work)
    assert small.meta["per_class"] == {"no warning": 10, "warns": 10} and small.meta["cached"]
    again = probe_task("NULL", str(root), size=20, seed=0, workdir=work)
    assert again.digest == small.digest and probe_task("NULL", str(root), size=20, seed=1, workdir=work).digest != (
        small.digest)


def test_null_needs_files_to_type_check(tmp_path):
    with pytest.raises(CorpusError, match="NullToken needs Python files"):
        probe_task("NULL", "humaneval", size=20, workdir=tmp_path)


def test_run_layers_probes_the_npath_task(tiny, npath_corpus, tmp_path):
    task = probe_task("NPATH", str(npath_corpus), size=72, seed=0)
    results = run_layers(tiny, [task], tmp_path)
    assert [r.task for r in results] == ["NPATH"] and results[0].labels == NPATH_BUCKETS
    assert results[0].n_layers == tiny.n_layers + 1
    assert results[0].provenance["task_meta"]["corpus"] == str(npath_corpus)
    assert [r.task for r in load_results(tmp_path)] == ["NPATH"]
