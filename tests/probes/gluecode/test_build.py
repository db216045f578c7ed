"""glueCode task building (probes.gluecode.build, probes.gluecode.masks): sites and labels on hand-made functions,
balance, splits, determinism, and a small build from the real algorithms corpus."""

import ast
import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import pytest

from asc.corpus.sources import load_corpus
from asc.errors import CorpusError, InputError
from probes.gluecode.build import (
    N_DISTRACTORS,
    TASK_CLASSES,
    build_items,
    build_items_from,
    build_provenance,
    build_task_sets,
    class_of,
    corpus_files,
)
from probes.gluecode.callgraph import parse_module
from probes.gluecode.context import name_visible
from probes.gluecode.items import MASK, NPATH_BUCKETS, OPERATORS, SPLITS, npath_bucket, split_of
from probes.gluecode.masks import call_sites, name_ok, operator_sites, still_parses
from probes.inspect.labels import npath
from tests.helpers import npath_function

REPO = Path(__file__).resolve().parents[3]


def _packages(split: str, n: int) -> list[str]:
    """Package names whose hash puts them in ``split``."""
    return [name for name in (f"pkg{i}" for i in range(400)) if split_of(name) == split][:n]


def _write(root: Path, package: str, text: str, module: str = "mod") -> None:
    (root / package).mkdir(parents=True, exist_ok=True)
    (root / package / "__init__.py").write_text("")
    (root / package / f"{module}.py").write_text(text)


# ---------------------------------------------------------------------------------------------- operator sites
def test_operator_sites_are_the_twelve_classes_at_the_right_spot():
    src = ("def f(a, b):\n    c = a + b\n    d = (a) - (b)\n    e = a * b / 2 % 3\n    if a == b or a != b:\n"
           "        return a < b <= c\n    return a > b >= c\n")
    sites = operator_sites(src)
    assert [s.label for s in sites] == ["=", "+", "=", "-", "=", "*", "/", "%", "==", "!=", "<", "<=", ">", ">="]
    for s in sites:
        assert src[s.start:s.end] == s.label
        assert src.split("\n")[s.row - 1][s.col:s.col + len(s.label)] == s.label
    minus = next(s for s in sites if s.label == "-")
    assert (minus.row, minus.col) == (3, 12)


def test_only_plain_assignments_and_binary_operators_count():
    src = ('def f(a, b=2, *args, **kw):\n    x: int = 3\n    a += 1\n    g(a=1)\n    y = -a\n    z = a // b ** 2\n'
           '    if (w := a):\n        pass\n    s = f"{a + b}" + "a - b"  # a * b\n    p = q = 0\n    return p\n')
    labels = [s.label for s in operator_sites(src)]
    assert labels == ["=", "=", "=", "+", "=", "="]  # y, z, s and its +, p and q: no unary -, //, **, +=, :=
    assert Counter(labels)["="] == 5


def test_operator_sites_skip_fstrings_and_unicode_columns_are_characters():
    src = 'def f(a):\n    s = "héllo wörld"; t = a + 1\n    return f"{a - 1}"\n'
    sites = operator_sites(src)
    assert [s.label for s in sites] == ["=", "=", "+"]
    plus = sites[-1]
    assert src[plus.start] == "+" and src.split("\n")[1][plus.col] == "+"


def test_still_parses_knows_where_assignment_cannot_stand():
    src = "def f(a, b):\n    x = a + b\n    if a < b:\n        return x\n    return 0\n"
    sites = {s.label: s for s in operator_sites(src)}
    lt, plus = sites["<"], sites["+"]
    assert still_parses(src, lt.start, lt.end) == [op for op in OPERATORS if op != "="]
    assert still_parses(src, plus.start, plus.end) == list(OPERATORS)  # x = a = b is a chained assignment


# ---------------------------------------------------------------------------------------------- call sites
CALLS = '''\
import os
from .util import tool
from . import sibling


def helper(x):
    return x


class Box:
    def method(self):
        return 1

    def run(self, xs, callback):
        n = len(xs)
        p = os.path.join("a", "b")
        h = helper(n)
        m = self.method()
        t = tool(p)
        xs.append(h)
        callback(m)
        u = unknown_global(t)
        s = sibling.thing(u)
        k = self.unknown()
        super().__init__()
        return Box()
'''


def test_call_kinds_api_and_local():
    module = parse_module(CALLS, "pkg/calls.py", "pkg.calls", "pkg")
    run = next(d.node for d in module.definitions if d.name == "run")
    src = ast.get_source_segment(CALLS, run)
    assert src is not None
    src = textwrap.dedent("    " + src)
    found = {(s.label, s.kind, s.where) for s in call_sites(src, module, None)}
    assert found == {("len", "api", "builtin"), ("join", "api", "import"), ("helper", "local", "file"),
                     ("method", "local", "file"), ("tool", "local", "project"), ("append", "api", "builtin-method"),
                     ("thing", "local", "project"), ("Box", "local", "file"), ("super", "api", "builtin")}
    # not sites: callback (a parameter), unknown_global and self.unknown (not found), __init__ (dunder)
    for s in call_sites(src, module, None):  # the masked token is the called name itself
        assert src[s.start:s.end] == s.label


def test_names_worth_predicting():
    assert name_ok("compute") and name_ok("_private") and name_ok("read")
    assert not name_ok("get") and not name_ok("__init__") and not name_ok("f")


# ---------------------------------------------------------------------------------------------- NPATH
CHAINS = {1: [], 2: [1], 3: [2], 4: [1, 1], 6: [1, 2], 8: [1, 1, 1], 9: [2, 2], 12: [1, 1, 2], 16: [1] * 4,
          24: [1, 1, 1, 2], 32: [1] * 5, 64: [1] * 6}  # NPath value: if/elif chains, each of c conditions


@pytest.fixture(scope="module")
def npath_corpus(tmp_path_factory) -> tuple[Path, dict[str, int]]:
    root = tmp_path_factory.mktemp("npath")
    expected = {}
    for split in SPLITS:
        for package in _packages(split, 2):
            text = []
            for value, chains in CHAINS.items():
                name = f"paths_{package}_{value}"
                expected[name] = value
                text.append(npath_function(name, chains, value))
            _write(root, package, "\n\n".join(text))
    return root, expected


def test_npath_labels_are_the_hand_computed_buckets(npath_corpus):
    root, expected = npath_corpus
    for name, value in expected.items():
        src = npath_function(name, CHAINS[value], value)
        assert npath(src) == value, name
    items = build_items("NPATH", str(root), size=48, seed=0)
    assert len(items) == 48
    for it in items:
        name = it.function.split("(")[0][4:]
        assert it.meta["npath"] == expected[name] and it.label == npath_bucket(expected[name])
        assert it.candidates == NPATH_BUCKETS and MASK not in it.function and it.file.count(f"def {name}(") == 1
    per = Counter((it.label, it.split) for it in items)
    assert set(per.values()) == {2} and len(per) == 24  # 12 buckets x 2 splits, 2 each


def test_shortfall_is_balanced_logged_and_recorded(npath_corpus, caplog):
    root, _ = npath_corpus
    report: dict = {}
    items = build_items("NPATH", str(root), size=120, seed=0, report=report)
    assert len(items) == 48  # 4 functions per bucket: every bucket gets 4 instead of 10
    assert "instead of 10" in caplog.text and report["warnings"]
    prov = build_provenance("NPATH", str(root), items, size=120, seed=0, report=report)
    assert prov["n_items"] == 48 and prov["complete"] is False
    assert prov["per_class"] == {b: 4 for b in NPATH_BUCKETS}
    assert prov["per_class_split"]["51-100"] == {"dev": 2, "test": 2}
    json.dumps(prov)  # the header must be JSON


# ---------------------------------------------------------------------------------------------- OPS
def _ops_function(name: str, op: str) -> str:
    if op == "=":
        return f'def {name}(a, b):\n    """One operator."""\n    print(a)\n    a = b\n    return a\n'
    return f'def {name}(a, b):\n    """One operator."""\n    print(a)\n    print(b)\n    return a {op} b\n'


@pytest.fixture(scope="module")
def ops_corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("ops")
    for split in SPLITS:
        for package in _packages(split, 2):
            _write(root, package, "\n\n".join(_ops_function(f"op_{package}_{i}", op) for i, op in enumerate(OPERATORS)))
    return root


def test_ops_mask_the_one_operator_at_its_spot(ops_corpus):
    items = build_items("OPS", str(ops_corpus), size=48, seed=0)
    assert Counter(it.label for it in items) == {op: 4 for op in OPERATORS}
    for it in items:
        name = it.function.split("(")[0][4:]
        op = OPERATORS[int(name.rsplit("_", 1)[1])]
        assert it.label == op and it.candidates == OPERATORS
        source = _ops_function(name, op)
        spot = "a = b" if op == "=" else f"a {op} b"
        assert it.function == source.replace(spot, spot.replace(op, MASK))
        assert it.file.count(MASK) == 1 and spot.replace(op, MASK) in it.file
        assert it.meta["line"] == (4 if op == "=" else 5) and it.meta["col"] == (6 if op == "=" else 13)
        assert it.label in it.meta["parses"]
        assert ("=" in it.meta["parses"]) == (op == "=")  # `return a = b` does not parse


# ---------------------------------------------------------------------------------------------- NAME and CALL
CORE = '''\
import math
from .util import clamp


def count_down(number):
    """Count down to zero."""
    if number <= 0:
        return 0
    print(number, "TAG")
    return count_down(number - 1)


def start_countdown(limit):
    """Start from a limit (count_down in a docstring)."""
    value = clamp(limit)
    total = count_down(value)
    return total + math.floor(len("TAG"))


def go(x):
    """A short name: never a NAME target."""
    y = x + len("TAG")
    z = y + 1
    return z


class Timer:
    def __init__(self, seconds):
        self.seconds = seconds
        self.left = seconds
        self.ticks = 0
        self.done = "TAG"
'''

UTIL = '''\
def clamp(value):
    """Clamp a value at zero."""
    if value < 0:
        value = len("TAG")
    return value


def launch_rocket(height):
    """Launch after a countdown."""
    from .core import count_down
    steps = count_down(height)
    print(steps, "TAG")
    return steps
'''


@pytest.fixture(scope="module")
def rocket(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("rocket")
    for split in SPLITS:
        for package in _packages(split, 1):
            _write(root, package, CORE.replace("TAG", package), "core")  # sources differ: not deduplicated
            (root / package / "util.py").write_text(UTIL.replace("TAG", package))
    return root


def test_name_masked_in_definition_recursion_callers_and_call_graph(rocket):
    items = build_items("NAME", str(rocket), size=8, seed=0)
    labels = {it.label for it in items}
    assert labels == {"count_down", "start_countdown", "clamp", "launch_rocket"}  # not go, not __init__
    assert Counter(it.split for it in items) == {"dev": 4, "test": 4}
    it = next(i for i in items if i.label == "count_down")
    assert it.function.startswith(f"def {MASK}(number):") and f"return {MASK}(number - 1)" in it.function
    assert it.meta["recursive"] is True
    assert f"total = {MASK}(value)" in it.file and "count_down" not in it.file
    assert "def start_countdown(limit):" in it.callgraph and "def launch_rocket(height):" in it.callgraph
    assert f"({MASK} in a docstring)" in it.callgraph and it.meta["in_strings"] == ["file", "callgraph"]
    assert it.meta["callers"] == 2
    assert len(it.candidates) == len(set(it.candidates)) and it.label in it.candidates
    same_split = {s.name for s in load_corpus(str(rocket)) if split_of(s.origin.split("/")[0]) == it.split}
    assert set(it.candidates) <= same_split


def test_name_identifier_only_masking_keeps_strings(rocket):
    items = build_items("NAME", str(rocket), size=8, seed=0, mask_strings=False)
    it = next(i for i in items if i.label == "count_down")
    assert "(count_down in a docstring)" in it.file and f"total = {MASK}(value)" in it.file


def test_call_items_kind_and_masked_spot(rocket):
    items = build_items("CALL", str(rocket), size=8, seed=0)
    assert Counter((it.meta["kind"], it.split) for it in items) == {("api", "dev"): 2, ("local", "dev"): 2,
                                                                    ("api", "test"): 2, ("local", "test"): 2}
    for it in items:
        assert it.candidates == () and it.function.count(MASK) == 1 and it.file.count(MASK) == 1
        line = it.function.split("\n")[it.meta["line"] - 1]
        assert line[it.meta["col"]:].startswith(MASK)
        original = (rocket / (it.module.replace(".", "/") + ".py")).read_text()
        assert it.file.replace(MASK, it.label) == original  # one spot masked, the same in the file
        start = it.file.index(MASK)
        assert it.file.count("\n", 0, start) + 1 == it.meta["file_line"] + it.meta["line"] - 1
        kinds = {"print": "api", "floor": "api", "len": "api", "clamp": "local", "count_down": "local"}
        assert it.meta["kind"] == kinds[it.label], it.label
    masked_clamp = [it for it in items if it.label == "clamp"]
    for it in masked_clamp:  # the masked callee is not shown in the call graph (called once)
        assert "def clamp(value)" not in it.callgraph


# ---------------------------------------------------------------------------------------------- properties
def test_same_seed_same_items_other_seed_other_order(ops_corpus):
    a = build_items("OPS", str(ops_corpus), size=24, seed=3)
    b = build_items("OPS", str(ops_corpus), size=24, seed=3)
    c = build_items("OPS", str(ops_corpus), size=24, seed=4)
    assert a == b and [it.id for it in a] != [it.id for it in c]


def test_deterministic_across_hash_seeds(rocket):
    code = ("import json, sys; from probes.gluecode.build import build_items; "
            "print(json.dumps([[i.id, i.label, list(i.candidates), i.function, i.callgraph] "
            "for i in build_items(sys.argv[1], sys.argv[2], size=8, seed=1)]))")
    outs = []
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO)}
        for task in ("NAME", "CALL"):
            run = subprocess.run([sys.executable, "-c", code, task, str(rocket)], capture_output=True, text=True,
                                 env=env, cwd=REPO, check=True)
            outs.append(run.stdout)
    assert outs[:2] == outs[2:]


def test_errors_name_the_fix(rocket):
    with pytest.raises(InputError, match="NPATH, OPS, NAME, CALL"):
        build_items("NULL", str(rocket))
    with pytest.raises(InputError, match="size >= 24"):
        build_items("OPS", str(rocket), size=10)
    with pytest.raises(CorpusError, match="no balanced item"):
        build_items("NPATH", str(rocket), size=24)  # two buckets only


def test_without_contexts_and_without_files(rocket, tmp_path):
    items = build_items("CALL", str(rocket), size=4, seed=0, contexts=False)
    assert all(it.file == "" and it.callgraph == "" and it.context("file") == it.function for it in items)
    jsonl = tmp_path / "c.jsonl"
    jsonl.write_text("\n".join(json.dumps({"id": f"s{i}", "code": _ops_function(f"op_{i}", op)})
                               for i, op in enumerate(OPERATORS * 10)) + "\n")
    items = build_items("OPS", str(jsonl), size=24, seed=0)
    assert items and all(it.file == it.function and it.module == it.meta["snippet"] for it in items)


# ---------------------------------------------------------------------------------------------- real corpus
@pytest.fixture(scope="module")
def algorithms_sets():
    return build_task_sets(["NPATH", "OPS", "NAME", "CALL"], "algorithms", size=60, seed=0)


@pytest.mark.parametrize("task", ["NPATH", "OPS", "NAME", "CALL"])
def test_algorithms_build_is_balanced_and_valid(algorithms_sets, task):
    items, prov = algorithms_sets[task]
    classes = TASK_CLASSES[task]
    assert len(items) == (60 // len(classes)) * len(classes) and prov["complete"]
    for split in SPLITS:
        counts = Counter(class_of(it) for it in items if it.split == split)
        assert set(counts) == set(classes) and len(set(counts.values())) == 1, counts
    modules = {s: {it.module for it in items if it.split == s} for s in SPLITS}
    assert not modules["dev"] & modules["test"]
    assert len({it.id for it in items}) == len(items)
    for it in items:
        assert it.split == split_of(it.meta["package"]) and it.file
        if task != "NPATH":
            assert MASK in it.function and MASK in it.file
        if it.candidates:
            assert it.label in it.candidates
        if task == "NPATH":
            assert npath_bucket(it.meta["npath"]) == it.label and npath(it.function) == it.meta["npath"]
            assert f"def {it.function.split('def ', 1)[1].split('(')[0]}(" in it.file
        elif task == "OPS":
            assert it.label in it.meta["parses"]
            ast.parse(it.function.replace(MASK, it.label))
        elif task == "NAME":
            assert name_ok(it.label) and len(it.candidates) == N_DISTRACTORS + 1
            assert not name_visible(it.function, it.label) and not name_visible(it.file, it.label)
        else:
            assert it.meta["kind"] in ("api", "local") and it.label.isidentifier()


def test_sharing_files_between_tasks_gives_the_same_items():
    snippets = load_corpus("algorithms")
    files = corpus_files("algorithms")
    shared = build_items_from("NPATH", snippets, files, size=24, seed=0)
    assert shared == build_items("NPATH", "algorithms", size=24, seed=0)


@pytest.mark.slow
def test_stdlib_full_size_counts():
    sets = build_task_sets(["NPATH", "OPS", "NAME", "CALL"], "stdlib", size=1000, seed=0)
    assert len(sets["NPATH"][0]) == 996 and len(sets["NAME"][0]) == 1000 and len(sets["CALL"][0]) == 1000
    ops, prov = sets["OPS"]
    assert len(ops) >= 600 and prov["per_class"]["/"] == prov["per_class"]["+"]  # "/" is rare in the stdlib
