"""probes.inspect.tasks: INSPECT probing tasks built from corpora: balanced classes and splits, labels by their
definition, mutations, determinism. (Label functions: test_labels.py; the task file format: test_taskfile.py.)"""

from __future__ import annotations

import json
import logging
import re

import numpy as np
import pytest

from asc.corpus.sources import Snippet, load_corpus
from probes.inspect import labels as L
from probes.inspect import tasks as T
from probes.inspect.tasks import TASK_NAMES, Task, build_task
from probes.inspect.tasks import TASK_SPLITS as SPLITS


@pytest.fixture(scope="module")
def mixed(algorithms):
    return load_corpus("humaneval") + algorithms


def check_balance_and_splits(task: Task, k: int) -> None:
    counts = np.bincount(task.y, minlength=len(task.labels))
    assert counts.tolist() == [k] * len(task.labels)
    n_va = round(0.2 * k)
    for c in range(len(task.labels)):
        per = [int(((task.y == c) & (task.split == s)).sum()) for s in SPLITS]
        assert per == [k - 2 * n_va, n_va, n_va]
    assert sorted(np.concatenate([task.indices(s) for s in SPLITS]).tolist()) == list(range(task.n))


def test_idn_drops_ambiguous_identifiers_and_keeps_classes_apart():
    snippets = [Snippet(f"s{i}", f"def func_{i}(var_{i}):\n    import mod_{i}\n    obj = Klass{i}(var_{i})\n"
                                 f"    return mod_{i}.helper_{i}(obj)\n") for i in range(8)]
    snippets += [Snippet("a", "def fa(x):\n    shared = 1\n    return x\n"),
                 Snippet("b", "def fb(x):\n    return shared(x)\n")]
    task = build_task("IDN", snippets, size=40)
    check_balance_and_splits(task, 8)  # module and class names: 8 each
    by_class = {lab: {t for t, y in zip(task.texts, task.y) if task.labels[y] == lab} for lab in task.labels}
    assert by_class["module"] == {f"mod_{i}" for i in range(8)}
    assert by_class["class"] == {f"Klass{i}" for i in range(8)}
    assert "shared" not in task.texts and len(set(task.texts)) == task.n
    assert by_class["variable"] <= {f"var_{i}" for i in range(8)} | {"obj", "x"}


@pytest.mark.parametrize("name", ["TYP", "REA", "JBL", "SRI", "SRK", "SCK"])
def test_binary_tasks_from_algorithms(name, algorithms):
    task = build_task(name, algorithms, size=100, seed=3)
    check_balance_and_splits(task, 50)
    assert task.labels == ("correct", "mutated")
    ids = np.array(task.meta["snippet_ids"])
    correct, mutated = set(ids[task.y == 0]), set(ids[task.y == 1])
    assert len(correct) == len(mutated) == 50 and not correct & mutated
    by_id = {s.id: s.source for s in algorithms}
    for text, y, sid in zip(task.texts, task.y, ids):
        assert (text == by_id[sid]) == (y == 0)
        assert L.mutation_sites(name, by_id[sid])  # both classes: the mutation was possible
    assert task.meta["n_long"] == 0  # short functions are preferred
    assert json.loads(json.dumps(task.meta))["per_class"] == {"correct": 50, "mutated": 50}


# ------------------------------------------------------------------------------------------ build_task
LABEL_OF = {
    "LEN": lambda text: T._bin(L.code_tokens(text), L.LEN_BINS),
    "OCU": lambda text: str(len(L.unique_operators(text))),
    "VCU": lambda text: str(len(L.unique_variables(text))),
    "CSC": lambda text: str(L.code_structures(text)),
    "MXN": lambda text: str(min(L.max_depth(text), 5)).replace("5", "5+"),
    "CPX": lambda text: str(L.decision_points(text)),
    "NPT": lambda text: T._bin(L.npath(text), L.NPT_BINS),
}


@pytest.mark.parametrize("name", list(LABEL_OF))
def test_metric_tasks_label_every_sample_by_its_definition(name, mixed):
    task = build_task(name, mixed, size=50, seed=1)
    k = 50 // len(task.labels)
    check_balance_and_splits(task, k)
    assert len(task.labels) == (5 if name in ("LEN", "MXN") else 10)
    assert [LABEL_OF[name](t) for t in task.texts] == [task.labels[c] for c in task.y]


def test_ktx_split_by_token(mixed):
    task = build_task("KTX", mixed, size=200, seed=0)
    plans = task.meta["split_tokens"]
    by_id = {s.id: s.source for s in mixed}
    all_tokens = sorted(L.KTX_OF, key=len, reverse=True)
    for cls in task.labels:
        tr, va, te = (set(plans[cls][s]) for s in SPLITS)
        assert tr and va and te and not (tr & te) and not (tr & va) and not (va & te)
        assert tr | va | te <= set(L.KTX_CLASSES[cls])
    for text, c, split, sid in zip(task.texts, task.y, task.split, task.meta["snippet_ids"]):
        last = next(t for t in all_tokens if text.endswith(t))  # the longest token the text ends with
        assert last in plans[task.labels[c]][split] and L.KTX_OF[last] == task.labels[c]
        assert text in by_id[sid] and text.count("\n") <= T.CONTEXT_LINES
    assert len(set(task.texts)) == task.n
    k = task.n // 10
    check_balance_and_splits(task, k)


def test_determinism_and_seed(algorithms):
    a, b = build_task("SRI", algorithms, size=60, seed=5), build_task("SRI", algorithms, size=60, seed=5)
    c = build_task("SRI", algorithms, size=60, seed=6)
    assert a.digest == b.digest and a.texts == b.texts and a.digest != c.digest
    assert re.fullmatch(r"[0-9a-f]{16}", a.digest)  # 16 hex digits


def test_shrink_warns_and_too_small_raises(algorithms, caplog):
    with caplog.at_level(logging.WARNING, logger="probes.inspect.tasks"):
        task = build_task("VCU", algorithms, size=1000)
    k = task.n // 10
    assert 5 <= k < 100 and task.meta["warnings"] and "instead of 100" in task.meta["warnings"][0]
    assert any("instead of 100" in r.getMessage() for r in caplog.records)
    check_balance_and_splits(task, k)
    with pytest.raises(ValueError, match="stdlib"):
        build_task("CPX", [Snippet(str(i), f"def f{i}(x):\n    return x + {i}\n") for i in range(20)])
    with pytest.raises(ValueError, match="size >= 50"):
        build_task("CPX", algorithms, size=20)


def test_duplicate_and_unparsable_snippets_are_skipped():
    good = [Snippet(f"s{i}", f"def f{i}(x):\n    return x <= {i}\n") for i in range(10)]
    bad = [Snippet("dup", good[0].source), Snippet("broken", "def f(:\n    return\n"), Snippet("no", "x = 1\n")]
    task = build_task("REA", good + bad, size=10)
    assert task.meta["n_usable"] == 10 and set(task.meta["snippet_ids"]) == {f"s{i}" for i in range(10)}


def test_unknown_task_and_split():
    with pytest.raises(ValueError, match="KTX.*NPT"):
        build_task("XYZ", [])
    task = Task("T", ("a", "b"), ("x", "y"), np.array([0, 1]), np.array(["tr", "te"]), {})
    with pytest.raises(ValueError, match="tr"):
        task.indices("train")
    assert task.indices("te").tolist() == [1] and task.n == 2
    assert set(TASK_NAMES) == set(T.TASK_INFO) and len(TASK_NAMES) == 15
