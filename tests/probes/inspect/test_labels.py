"""probes.inspect.labels: INSPECT's label functions checked by hand, and the token mutations of the binary tasks."""

from __future__ import annotations

import builtins
import keyword
import textwrap

import numpy as np
import pytest

from probes.inspect import labels as L
from probes.inspect import tasks as T


def src(code: str) -> str:
    return textwrap.dedent(code).lstrip("\n")


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
    from asc.complexity import complexity_of_source

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
    assert complexity_of_source(code) == L.decision_points(code) + 1


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
