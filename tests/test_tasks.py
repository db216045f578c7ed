"""INSPECT probing tasks (probes/tasks.py): hand-checked labels and mutations, sampling properties, TSV files."""

from __future__ import annotations

import builtins
import json
import keyword
import logging
import textwrap

import numpy as np
import pytest

from asc.corpus.sources import Snippet, load_corpus
from probes.inspect import labels as L
from probes.inspect import tasks as T
from probes.inspect.tasks import TASK_NAMES, Task, build_task, load_tsv
from probes.inspect.tasks import TASK_SPLITS as SPLITS


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


@pytest.fixture(scope="module")
def algorithms():
    return load_corpus("algorithms")


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


# ------------------------------------------------------------------------------------------ label functions
NPATH_9 = src("""
    def f(a, b):
        if a and b:
            x = 1
        else:
            x = 2
        for i in range(3):
            if i:
                continue
        return x
""")
NPATH_10 = src("""
    def g(x):
        try:
            y = int(x)
        except ValueError:
            y = 0
        except TypeError:
            if x:
                y = 1
        finally:
            pass
        return y if y else -1
""")


def test_npath_hand_checked():
    assert L.npath(NPATH_9) == 9  # if: 1 (and) + 1 + 1 = 3; for: (if 2) + 1 = 3; 3 * 3
    assert L.npath(NPATH_10) == 10  # try: 1 + 1 + 2 + finally 1 = 5; return with a ternary: 2
    assert L.npath(src("""
        def h(a, b, c):
            while a or b or c:
                a -= 1
            return a and b
    """)) == 4  # while: 2 bool ops + 1 + 1; return: 1 bool op -> 1
    assert L.npath("def k(x):\n    y = x\n    return y\n") == 1
    assert L.npath("def k(x):\n    if x:\n        pass\n    if x:\n        pass\n    if x:\n        pass\n") == 8


def test_max_depth_hand_checked():
    code = src("""
        def h(x):
            if x:
                for i in x:
                    while i:
                        i -= 1
            elif x is None:
                return 0
            else:
                with open(x) as f:
                    try:
                        pass
                    except OSError:
                        if f:
                            return 1
            return 2
    """)
    assert L.max_depth(code) == 5
    assert L.max_depth("def f(x):\n    return x\n") == 1
    elif_ = "def f(x):\n    if x:\n        a = 1\n    elif x > 1:\n        b = 2\n"
    else_if = "def f(x):\n    if x:\n        a = 1\n    else:\n        if x > 1:\n            b = 2\n"
    assert (L.max_depth(elif_), L.max_depth(else_if)) == (2, 3)


def test_unique_operators_are_operator_tokens_outside_strings():
    code = src("""
        def f(a, b=1, *args) -> bool:
            s = "x + y"  # a - b
            c = a + b * 2
            c += 1
            if a < b and not c:
                return -c
            return c == a or a in args
    """)
    assert L.unique_operators(code) == {"=", "*", "+", "+=", "<", "and", "not", "-", "==", "or", "in"}


def test_unique_variables():
    code = src("""
        def f(self, a, *args, k=0, **kw):
            import os as o
            x, (y, z) = a
            for i in range(3):
                w = [j for j in args]
            with open(a) as fh:
                pass
            try:
                pass
            except Exception as e:
                pass
            def inner(p):
                return p
            self.attr = 1
            total += o.sep
            return (n := 5)
    """)
    assert L.unique_variables(code) == {"self", "a", "args", "k", "kw", "x", "y", "z", "i", "w", "j", "fh", "e",
                                        "p", "total", "n"}


STRUCTURES = src("""
    def f(x):
        if x:
            pass
        elif x > 1:
            pass
        else:
            pass
        for i in x:
            while i:
                break
        try:
            with open(x) as fh:
                pass
        except OSError:
            pass
        y = [a for a in x if a]
        z = 1 if x else 2
        def g():
            if x and y or z:
                return 1
""")


def test_code_structures_and_decision_points():
    assert L.code_structures(STRUCTURES) == 7  # if, elif, for, while, try, with, inner if
    # if, elif, inner if (3) + for + while + except + comprehension for/if (2) + ternary + and/or (2)
    assert L.decision_points(STRUCTURES) == 11
    assert L.decision_points("def f(x):\n    return x\n") == 0


def test_decision_points_match_lizard_on_flat_function():
    from asc.causal import cyclomatic_complexity

    code = src("""
        def f(a, b):
            if a and b:
                return 1
            elif a or b:
                return 2
            for i in range(a):
                while b > i:
                    b -= 1
            return 0
    """)
    assert L.decision_points(code) == 6
    assert cyclomatic_complexity(code) == L.decision_points(code) + 1


def test_code_tokens_and_len_bins():
    assert L.code_tokens("def f(x):\n    # a comment\n    return x + 1  # c\n") == 10
    assert L.code_tokens('def f():\n    return f"{a} and {b!r}"\n') == 7  # an f-string is one token
    assert [T._bin(v, L.LEN_BINS) for v in (0, 30, 31, 45, 46, 110, 111, 5000)] == [
        "0-30", "0-30", "31-45", "31-45", "46-65", "66-110", "111+", "111+"]
    assert [T._bin(v, L.NPT_BINS) for v in (1, 5, 8, 10, 100, 101)] == ["1", "4-6", "7-8", "9-10", "31-100", None]


def test_identifier_kinds():
    code = src("""
        def load(path, mode="r"):
            import json
            import xml.etree.ElementTree as ET
            from collections import OrderedDict
            if not isinstance(path, (str, PathLike)):
                raise TypeError("bad")
            try:
                data = json.loads(open(path).read())
            except ValueError:
                data = OrderedDict()
            node = ET.Element("x")
            result = helper(data)
            return os.path.join(result, node)
    """)
    kinds = L.identifier_kinds(code)
    assert kinds["module"] == {"json", "xml.etree.ElementTree", "ET", "collections", "os"}
    assert kinds["class"] == {"str", "PathLike", "TypeError", "ValueError", "OrderedDict", "Element"}
    assert kinds["function"] == {"load", "loads", "open", "read", "helper", "join", "isinstance"}
    assert kinds["variable"] == {"path", "mode", "data", "node", "result"}


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


# ------------------------------------------------------------------------------------------ mutations
MUTABLE = src("""
    def convert(value, items=None) -> str:
        # int in a comment, "int" in a string
        if isinstance(value, int) and value <= 10:
            for item in items or []:
                if item != value:
                    continue
                return str(item)
        text = "int < float"
        return self.int + float(value)
""")


def token_strings(code: str) -> list[str]:
    return [t.string for t in L.code_token_list(code)]


@pytest.mark.parametrize("task", ["TYP", "REA", "SRI", "SRK", "SCK"])
def test_single_token_replacements(task):
    before = token_strings(MUTABLE)
    seen = set()
    for seed in range(40):
        mutated = L.mutate(task, MUTABLE, np.random.default_rng(seed))
        after = token_strings(mutated)
        assert mutated != MUTABLE and len(after) == len(before)
        diff = [i for i, (a, b) in enumerate(zip(before, after)) if a != b]
        assert len(diff) == 1
        old, new = before[diff[0]], after[diff[0]]
        seen.add(old)
        if task == "TYP":
            assert old in L.BUILTIN_TYPES and not hasattr(builtins, new) and new not in before
            assert mutated.count('"int') == MUTABLE.count('"int') and "# int in a comment" in mutated
        elif task == "REA":
            assert old in L.RELATIONAL and new in L.ASSIGNMENT
        elif task == "SRI":
            assert new in before and not keyword.iskeyword(old) and not keyword.iskeyword(new)
        elif task == "SRK":
            assert keyword.iskeyword(old) and keyword.iskeyword(new) and diff[0] > 0  # leading def kept
        else:
            assert diff[0] > 0 and L.KTX_OF[old] == L.KTX_OF[new] and keyword.iskeyword(new)
    if task == "TYP":
        assert seen == {"int", "str", "float"}  # Names only: not in the string, the comment or self.int
    if task == "REA":
        assert seen == {"<=", "!="}


def test_jumbled_tokens_swap_two_adjacent_tokens_on_a_line():
    toks = L.code_token_list(MUTABLE)
    for seed in range(30):
        mutated = L.mutate("JBL", MUTABLE, np.random.default_rng(seed))
        swaps = [i for i, (a, b) in enumerate(zip(toks, toks[1:])) if
                 MUTABLE[:a.start] + b.string + MUTABLE[a.end:b.start] + a.string + MUTABLE[b.end:] == mutated]
        assert mutated != MUTABLE and swaps
        a, b = toks[swaps[0]], toks[swaps[0] + 1]
        assert a.string != b.string and a.row == b.row
    assert L.mutate("JBL", "x = 1\n", np.random.default_rng(0)) in ("= x 1\n", "x 1 =\n")


def test_mutation_impossible_and_unknown():
    assert L.mutation_sites("TYP", "def f(x):\n    return x\n") == []
    assert L.mutation_sites("REA", "def f(x):\n    return x\n") == []
    with pytest.raises(ValueError, match="TYP"):
        L.mutation_sites("LEN", "def f(x):\n    return x\n")


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
    assert len(a.digest) == 16 and int(a.digest, 16) >= 0


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


# ------------------------------------------------------------------------------------------ TSV
def test_load_tsv_skips_broken_rows(tmp_path, caplog):
    path = tmp_path / "mxn.tsv"
    path.write_text("tr\t10\tpublic void f() { int x; }\n"
                    "va\t2\tvoid g() {\n"
                    "  return; }\n"
                    "te\t1\tvoid h() {}\n"
                    "xx\t1\tfoo\n"
                    "tr\t2\t   \n", encoding="utf-8")
    with caplog.at_level(logging.WARNING, logger="probes.inspect.tasks"):
        task = load_tsv(path)
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "3 malformed" in warnings[0] and "line 3" in warnings[0]
    assert task.name == "MXN" and task.labels == ("1", "2", "10")  # natural order
    assert task.texts == ("public void f() { int x; }", "void g() {", "void h() {}")
    assert [task.labels[c] for c in task.y] == ["10", "2", "1"] and task.split.tolist() == ["tr", "va", "te"]
    assert task.meta["skipped_rows"] == 3 and task.meta["first_bad_line"] == 3


def test_tsv_round_trip_with_tabs_newlines_backslashes(tmp_path):
    texts = ("def f():\n\treturn '\\n'\n", "a\\tb\tc\r\nd", "ends with \\", "plain")
    task = Task("KTX", ("kw_flow", "symbol"), texts, np.array([0, 1, 1, 0]), np.array(["tr", "va", "te", "tr"]), {})
    path = tmp_path / "ktx.tsv"
    task.to_tsv(path)
    lines = path.read_text(encoding="utf-8").split("\n")
    assert lines[0] == "#asc-studio escaped" and len(lines) == 6 and lines[-1] == ""
    back = load_tsv(path)
    assert back.texts == texts and back.name == "KTX" and back.digest == task.digest
    assert load_tsv(path, name="other").name == "other"


def test_load_tsv_without_valid_rows(tmp_path):
    path = tmp_path / "bad.tsv"
    path.write_text("nothing here\n\n", encoding="utf-8")
    with pytest.raises(ValueError, match="no valid"):
        load_tsv(path)


def test_built_task_round_trips(tmp_path, algorithms):
    task = build_task("MXN", algorithms, size=50)
    task.to_tsv(tmp_path / "mxn.tsv")
    back = load_tsv(tmp_path / "mxn.tsv")
    assert back.digest == task.digest and back.labels == ("1", "2", "3", "4", "5+")
