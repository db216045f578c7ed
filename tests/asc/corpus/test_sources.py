"""asc.corpus.sources: built-in corpora, folders, files and .jsonl, and function extraction."""

import json

import pytest

from asc.corpus.sources import extract_functions, load_corpus
from asc.errors import CorpusError

PY = '''\
import os

def outer(a):
    """Doc."""
    def inner(b):
        return b
    return inner(a)

class K:
    def method(self, x):
        if x:
            return 1
        return 2
'''


def test_extracts_top_level_functions_and_methods_dedented():
    funcs = extract_functions(PY, "python", "m.py", min_lines=None, max_lines=None)
    assert [f.name for f in funcs] == ["outer", "method"]  # inner stays inside outer
    method = funcs[1]
    assert method.source.startswith("def method(self, x):\n    if x:")
    assert method.line == 10 and method.id == "m.py:10"
    assert "def inner" in funcs[0].source


def test_line_filters():
    funcs = extract_functions(PY, "python", min_lines=5, max_lines=60)
    assert [f.name for f in funcs] == ["outer"]
    assert extract_functions(PY, "python", min_lines=1, max_lines=3) == []


def test_java_methods():
    src = "class A {\n  A() { x = 1; }\n  int f(int a) {\n    return a + 1;\n  }\n}\n"
    funcs = extract_functions(src, "java", min_lines=None, max_lines=None)
    assert [f.name for f in funcs] == ["A", "f"]
    assert funcs[1].source.startswith("int f(int a) {")


def test_folder_corpus_skips_invalid_utf8(tmp_path, caplog):
    (tmp_path / "good.py").write_text(PY)
    (tmp_path / "bad.py").write_bytes(b"def f():\n    return '\xff'\n" * 3)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "J.java").write_text("class J {\n  int g() {\n    int a = 1;\n    return a;\n  }\n}\n")
    snips = load_corpus(str(tmp_path), min_lines=1)
    assert {s.name for s in snips} == {"outer", "method", "g"}
    assert {s.language for s in snips} == {"python", "java"}
    assert "bad.py" in caplog.text and "UTF-8" in caplog.text


def test_jsonl_corpus_skips_malformed_rows(tmp_path, caplog):
    p = tmp_path / "c.jsonl"
    p.write_text(json.dumps({"id": "a", "code": "x = 1\n"}) + "\n{broken\n" + json.dumps({"nocode": 1}) + "\n"
                 + json.dumps({"code": "y = 2\n", "language": "python"}) + "\n")
    snips = load_corpus(str(p))
    assert [s.id for s in snips] == ["a", "c.jsonl:4"]
    assert caplog.text.count("skipped") == 2


def test_duplicates_dropped_and_limit(tmp_path):
    p = tmp_path / "c.jsonl"
    p.write_text("\n".join(json.dumps({"code": c}) for c in ["a = 1\n", "a = 1\n", "b = 2\n", "c = 3\n"]))
    assert [s.source for s in load_corpus(str(p))] == ["a = 1\n", "b = 2\n", "c = 3\n"]
    assert len(load_corpus(str(p), limit=2)) == 2


def test_builtin_corpora():
    he = load_corpus("humaneval")
    assert len(he) == 164 and he[0].id == "HumanEval/0"
    assert he[0].source.startswith("def has_close_elements(")
    assert "return False" in he[0].source  # canonical solution included
    algos = load_corpus("algorithms")
    assert len(algos) > 700
    assert all(5 <= s.n_lines <= 60 for s in algos)
    std = load_corpus("stdlib", limit=50)
    assert len(std) == 50 and len({s.id for s in std}) == 50


def test_unknown_corpus_lists_forms():
    with pytest.raises(CorpusError, match="humaneval, algorithms, stdlib"):
        load_corpus("nope-corpus")


def _count_parses(monkeypatch) -> list[int]:
    """Every tree-sitter parse made through asc.syntax.get_parser from now on (one entry each)."""
    from asc import syntax
    from asc.corpus import sources

    made: list[int] = []
    real = syntax.get_parser

    class Counting:
        def __init__(self, language):
            self.parser = real(language)

        def parse(self, data):
            made.append(len(data))
            return self.parser.parse(data)

    monkeypatch.setattr(syntax, "get_parser", Counting)
    monkeypatch.setattr(sources, "get_parser", Counting)
    return made


def test_a_file_is_parsed_once_however_many_functions_it_holds(tmp_path, monkeypatch):
    """The depth limit is read from the file's tree: the functions are not parsed again one by one (that second
    parse was a quarter of a stdlib load)."""
    (tmp_path / "m.py").write_text("".join(f"def f{i}(x):\n    y = x + {i}\n    return [y]\n\n" for i in range(5)))
    made = _count_parses(monkeypatch)
    assert len(load_corpus(str(tmp_path), min_lines=1)) == 5
    assert len(made) == 1


def test_a_builtin_corpus_is_read_once_per_process_until_one_of_its_files_changes(tmp_path, monkeypatch):
    """A whole load of ``stdlib`` (here a stand-in folder) is kept: the next load reads no file and gives equal
    snippets in a list of its own; a changed file, a new file or other filters are read again."""
    from asc import confined
    from asc.corpus import sources

    lib = tmp_path / "lib"
    (lib / "pkg").mkdir(parents=True)
    (lib / "a.py").write_text(PY)
    monkeypatch.setattr(confined, "builtin_folder", lambda spec: lib if spec == "stdlib" else None)
    monkeypatch.setattr(sources, "_LOADED", {}, raising=False)  # none kept by other tests
    made = _count_parses(monkeypatch)
    first = load_corpus("stdlib", min_lines=1)
    first.append(first[0])  # the caller's list: the kept load is not changed by it
    again = load_corpus("stdlib", min_lines=1)
    assert len(made) == 1 and again == first[:-1] and [s.name for s in again] == ["outer", "method"]
    assert len(load_corpus("stdlib", limit=1, min_lines=1)) == 1 and len(made) == 2  # a partial load is not kept
    assert load_corpus("stdlib", min_lines=2) == again and len(made) == 3  # other filters: read
    (lib / "pkg" / "b.py").write_text("def added(x):\n    return x\n")
    assert [s.name for s in load_corpus("stdlib", min_lines=1)] == ["outer", "method", "added"] and len(made) == 5
    (lib / "a.py").write_text(PY.replace("return 2", "return 3"))
    changed = load_corpus("stdlib", min_lines=1)
    assert len(made) == 7 and "return 3" in changed[1].source
    assert load_corpus("stdlib", min_lines=1) == changed and len(made) == 7


def test_a_function_too_deep_to_explain_is_skipped_by_its_depth_in_the_file(caplog):
    deep = "def deep():\n    return " + "(" * 300 + "1" + ")" * 300 + "\n"
    shallow = "class C:\n    def ok(self):\n        return " + "(" * 200 + "1" + ")" * 200 + "\n"
    assert [s.name for s in extract_functions(deep + "\n" + shallow, min_lines=1)] == ["ok"]
    assert "skipping line1: its syntax tree is more than 256 levels deep" in caplog.text
