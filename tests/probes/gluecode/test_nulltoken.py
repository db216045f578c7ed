"""NullToken items from a real mypy run on hand-made files with known warnings (probes.gluecode.nulltoken,
probes.gluecode.nullcheck): the labelled token, discarded and negative functions, the copy under another
package name, mypy's JSON output, the cache, determinism; one slow test over a slice of the real stdlib."""

from __future__ import annotations

import importlib.util
import shutil
import sysconfig
import textwrap
from pathlib import Path

import pytest

from asc.errors import AscError, CorpusError, InputError
from probes.gluecode import nullcheck
from probes.gluecode.items import MASK, NO_WARNING, load_items, save_items, split_of
from probes.gluecode.nullcheck import (
    CheckerError,
    Diagnostic,
    check_corpus,
    none_warning,
    parse_mypy_json,
    union_has_none,
)
from probes.gluecode.nulltoken import NULL_PROMPT, FileIndex, locate, null_items

SHOP = '''\
import re
from typing import IO, Optional


def first_word(text):
    m = re.match(r"\\w+", text)
    return m.group(0)


def two_matches(text):
    a = re.match(r"\\w+", text)
    b = re.search(r"\\d+", text)
    return a.end() + b.start()


def total(xs: list[int]) -> int:
    out = 0
    for x in xs:
        out += x
    return out


def lookup(d: dict[str, Optional[str]], key: str) -> str:
    return d.get(key, "").strip()


def add_one(n: Optional[int]) -> int:
    return n + 1


def first(xs: Optional[list[int]]) -> int:
    return xs[0]


def length(s: Optional[str]) -> int:
    return len(s)


def read_all(f: Optional[IO[str]]) -> None:
    with f:
        pass


def count_words(text: str) -> int:
    return len(text.split())


def shout(text: str) -> str:
    return text.upper() + "!"


class Cart:
    def __init__(self) -> None:
        self.owner: Optional[str] = None

    def owner_name(self) -> str:
        return "é" + self.owner.title()


def greet(cart: Cart) -> str:
    return "Hello " + cart.owner_name()
'''

JSON_PY = '''\
from typing import Optional


def split_fields(line: Optional[str]) -> list[str]:
    return line.split(",")


def join_fields(fields: list[str]) -> str:
    return ",".join(fields)
'''


@pytest.fixture(scope="module")
def corpus(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("null_corpus")
    (root / "shop.py").write_text(SHOP, encoding="utf-8")
    (root / "json.py").write_text(JSON_PY, encoding="utf-8")  # named like a stdlib module
    return root


@pytest.fixture(scope="module")
def built(corpus, tmp_path_factory):
    work = tmp_path_factory.mktemp("null_work")
    items, prov = null_items(str(corpus), size=100, seed=0, workdir=work, min_lines=1)
    return {it.meta["name"]: it for it in items}, prov, work


def test_an_optional_attribute_access_labels_the_dereferenced_name(built):
    by_name, _, _ = built
    it = by_name["first_word"]  # untyped: mypy checks it only with --check-untyped-defs
    assert it.task == "NULL" and it.label == "m"
    assert it.meta["code"] == "union-attr" and it.meta["kind"] == "attr"
    assert it.meta["message"] == 'Item "None" of "Match[str] | None" has no attribute "group"'
    assert (it.meta["line"], it.meta["col"]) == (3, 11)  # `    return m.group(0)`, relative to the def line
    assert it.function[it.meta["start"]:it.meta["end"]] == "m"
    assert it.function.endswith(f"{NULL_PROMPT}{MASK}\n") and it.function.count(MASK) == 1
    assert it.candidates == ("first_word", "text", "m", "re", "match", "group", NO_WARNING)
    assert it.id == "NULL/shop.py:5" and it.module == "shop" and it.meta["package"] == "shop"
    assert it.split == split_of("shop") and it.meta["file_line"] == 5


@pytest.mark.parametrize("name, label, kind", [
    ("add_one", "n", "operator"),  # n + 1
    ("first", "xs", "index"),  # xs[0]
    ("lookup", "get", "attr"),  # d.get(key, "").strip(): the called name
    ("read_all", "f", "attr"),  # `with f:` gives __enter__ and __exit__ at one spot: one site, kept
    ("owner_name", "owner", "attr"),  # self.owner.title() after a non-ASCII literal on the line
    ("split_fields", "line", "attr"),  # in json.py
])
def test_each_kind_of_warning_points_at_its_token(built, name, label, kind):
    it = built[0][name]
    assert (it.label, it.meta["kind"]) == (label, kind)
    assert it.function[it.meta["start"]:it.meta["end"]] == label
    line = it.function.split("\n")[it.meta["line"] - 1]
    assert line[it.meta["col"]:].startswith(label)


def test_two_warnings_discard_the_function_and_clean_functions_are_negatives(built):
    by_name, prov, _ = built
    assert "two_matches" not in by_name
    assert prov["functions with several warnings (discarded)"] == 1
    negatives = {n for n, it in by_name.items() if it.label == NO_WARNING}
    assert negatives <= {"total", "count_words", "shout", "join_fields", "__init__", "greet"} and negatives
    assert "length" not in by_name  # len(Optional[str]) is an argument mismatch: neither positive nor negative
    for it in by_name.values():
        assert it.label in it.candidates and it.candidates[-1] == NO_WARNING
    n_pos = sum(it.label != NO_WARNING for it in by_name.values())
    assert n_pos == 7 and len(negatives) == round(n_pos * 0.25)  # the paper's 20% share of all items


def test_a_file_named_like_a_stdlib_module_is_checked_as_itself(built, corpus):
    _, prov, work = built
    assert prov["copied_as"] == "corpus_copy"  # json.py would shadow typeshed's json
    result = check_corpus(str(corpus), work)
    assert result.cached and result.package == "corpus_copy"
    msgs = [(d.file, d.line, d.message) for d in result.diagnostics]
    assert ("json.py", 5, 'Item "None" of "str | None" has no attribute "split"') in msgs


def test_stdlib_files_are_copied_under_stdlib_copy(monkeypatch, tmp_path):
    base = tmp_path / "lib"
    (base / "json").mkdir(parents=True)
    (base / "json" / "__init__.py").write_text(JSON_PY)
    (base / "string.py").write_text("import re\n\ndef word(s):\n    return re.match('a', s).end()\n")
    (base / "bad-name.py").write_text("x = 1\n")
    rels = ["bad-name.py", "json/__init__.py", "string.py"]
    monkeypatch.setattr(nullcheck, "corpus_texts", lambda spec, roots=None: (base, {r: (base / r).read_bytes()
                                                                                    for r in rels}))
    result = check_corpus("stdlib", tmp_path / "work")
    assert result.package == "stdlib_copy" and result.files == ["json/__init__.py", "string.py"]
    assert result.skipped == {"bad-name.py": "its path is not a dotted module name"}
    assert {(d.file, d.line) for d in result.diagnostics if none_warning(d)} == {("json/__init__.py", 5),
                                                                               ("string.py", 4)}


def test_items_are_deterministic_and_the_cache_is_used(built, corpus, monkeypatch):
    by_name, prov, work = built
    assert not prov["cached"] and prov["checker"] == "mypy" and prov["checker_version"] == nullcheck.mypy_version()
    assert "--check-untyped-defs" in prov["flags"] and prov["files_checked"] == 2

    def no_mypy(*args, **kwargs):
        raise AssertionError("mypy ran although its output is cached")

    monkeypatch.setattr(nullcheck, "_run_mypy", no_mypy)
    items, again = null_items(str(corpus), size=100, seed=0, workdir=work, min_lines=1)
    assert again["cached"] and {it.meta["name"]: it for it in items} == by_name
    few, _ = null_items(str(corpus), size=5, seed=1, workdir=work, min_lines=1)
    assert len(few) == 5 and sum(it.label == NO_WARNING for it in few) == 1
    assert [it.id for it in few] == [it.id for it in null_items(str(corpus), size=5, seed=1, workdir=work,
                                                                min_lines=1)[0]]
    assert {it.split for it in items if it.module == "shop"} in ({"dev"}, {"test"})  # one split per module


def test_a_changed_file_runs_mypy_again(corpus, tmp_path):
    folder = tmp_path / "c"
    shutil.copytree(corpus, folder)
    _, first = null_items(str(folder), workdir=tmp_path / "w", min_lines=1)
    (folder / "shop.py").write_text(SHOP + "\n\ndef extra(x: Optional[str]) -> str:\n    return x.lower()\n")
    _, second = null_items(str(folder), workdir=tmp_path / "w", min_lines=1)
    assert not first["cached"] and not second["cached"]
    assert second["positives_available"] == first["positives_available"] + 1


def test_items_round_trip_through_the_task_file(built, tmp_path):
    items = list(built[0].values())
    save_items(tmp_path / "null.jsonl", "NULL", items, {"corpus": "test"})
    _, loaded = load_items(tmp_path / "null.jsonl")
    assert loaded == items


def test_the_file_and_callgraph_contexts_end_with_the_question(built, corpus):
    it = built[0]["owner_name"]
    assert it.file.startswith((corpus / "shop.py").read_text().rstrip())
    assert it.file.endswith(f"# possible None dereference in Cart.owner_name at: {MASK}\n")
    assert "def greet(cart: Cart) -> str" in it.callgraph  # its caller's signature
    assert it.context("callgraph").endswith(it.file) and it.context("function") == it.function
    assert built[0]["split_fields"].module == "json" and built[0]["split_fields"].meta["package"] == "json"


def test_mypy_json_lines_are_parsed():
    out = ('{"file": "a/b.py", "line": 6, "column": 11, "end_line": 6, "end_column": 18, "message": '
           '"Item \\"None\\" of \\"Match[str] | None\\" has no attribute \\"group\\"", "hint": null, "code": '
           '"union-attr", "severity": "error"}\n'
           '{"file": "a/b.py", "line": 7, "column": 4, "message": "See docs", "hint": null, "code": null, '
           '"severity": "note"}\n'
           "Found 1 error in 1 file (checked 2 source files)\n")
    first, note = parse_mypy_json(out)
    assert first == Diagnostic("a/b.py", 6, 11, 6, 18, 'Item "None" of "Match[str] | None" has no attribute "group"',
                               "union-attr", None, "error")
    assert note.severity == "note" and (note.end_line, note.end_column) == (7, 4)
    with pytest.raises(CheckerError, match="line 1"):
        parse_mypy_json('{"file": "a.py", "line": "x"}')


def _d(message: str, code: str, hint: str | None = None) -> Diagnostic:
    return Diagnostic("a.py", 1, 0, 1, 1, message, code, hint)


@pytest.mark.parametrize("message, code, hint, expected", [
    ('Item "None" of "Match[str] | None" has no attribute "group"', "union-attr", None, ("attr", "value")),
    ('Item "None" of Module | None has no attribute "x"', "union-attr", None, ("attr", "value")),
    ('Item "None" of "int | None" has no attribute "__iter__" (not iterable)', "union-attr", None, ("attr", "value")),
    ('Item "int" of "int | None" has no attribute "__iter__" (not iterable)', "union-attr", None, None),
    ('Value of type "list[Any] | None" is not indexable', "index", None, ("index", "value")),
    ('Value of type "None" is not indexable', "index", None, ("index", "value")),
    ('Unsupported target for indexed assignment ("Headers | None")', "index", None, ("index", "value")),
    ('Invalid index type "str" for "dict[type[None], int]"; expected type "type[None]"', "index", None, None),
    ('Unsupported operand types for + ("None" and "int")', "operator", None, ("operator", "left")),
    ('Unsupported operand types for + ("int" and "None")', "operator", None, ("operator", "right")),
    ('Unsupported operand types for > ("int" and "None")', "operator", 'Left operand is of type "int | None"',
     ("operator", "left")),
    ('Unsupported operand types for / ("str" and "int")', "operator", 'Left operand is of type "float | str"', None),
    ('Unsupported left operand type for + ("None")', "operator", None, ("operator", "left")),
    ('Unsupported right operand type for in ("Any | None")', "operator", None, ("operator", "right")),
    ('Unsupported operand type for unary - ("int | None")', "operator", None, ("operator", "operand")),
    ('Unsupported operand type for ~ ("None")', "operator", None, ("operator", "operand")),
    ('"None" not callable', "misc", None, ("call", "value")),
    ('"None" object is not iterable', "misc", None, ("iter", "value")),
    ('Argument 1 to "len" has incompatible type "str | None"; expected "Sized"', "arg-type", None, None),
    ('Incompatible types in "await" (actual type "None", expected type "Awaitable[Any]")', "misc", None, None),
])
def test_the_warning_set(message, code, hint, expected):
    w = none_warning(_d(message, code, hint))
    assert (None if w is None else (w.kind, w.side)) == expected


def test_union_has_none_reads_the_top_level_only():
    assert union_has_none("None") and union_has_none("str | Any | None") and union_has_none('"None"')
    assert not union_has_none("dict[str, int | None]") and not union_has_none("Callable[[int | None], str]")


@pytest.mark.parametrize("source, diag, token", [
    ("x = a + b + c\n", (1, 4, 1, 5, 'Unsupported operand types for + ("None" and "int")', "Left"), "a"),
    ("x = a + b + c\n", (1, 4, 1, 5, 'Unsupported operand types for + ("int" and "None")', "Right"), None),  # b or c?
    ("x = a * b + c\n", (1, 4, 1, 5, 'Unsupported operand types for + ("int" and "None")', "Right"), "c"),
    ("y = a < 3\n", (1, 4, 1, 5, 'Unsupported operand types for > ("int" and "None")', None), "a"),  # mirrored
    ("t |= self.flag\n", (1, 5, 1, 14, 'Unsupported operand types for | ("int" and "None")', None), "flag"),
    ("k = 'a' + (u or None)\n", (1, 4, 1, 7, 'Unsupported operand types for + ("str" and "None")', None), None),
    ("e.text = e.text + ' ' + s\n", (1, 9, 1, 21, 'Unsupported left operand type for + ("None")', None), "text"),
])
def test_operator_warnings_find_the_operand_or_give_up(source, diag, token):
    line, col, end_line, end_col, message, side = diag
    hint = f'{side} operand is of type "int | None"' if side else None
    w = none_warning(Diagnostic("a.py", line, col, end_line, end_col, message, "operator", hint))
    assert w is not None
    target = locate(w, FileIndex(source))
    assert (None if target is None else target.name) == token


def test_locate_reads_character_columns_after_non_ascii_text():
    source = 's = "éé" + x.upper()\n'
    w = none_warning(Diagnostic("a.py", 1, 13, 1, 20, 'Item "None" of "str | None" has no attribute "upper"',
                                "union-attr"))  # UTF-8 bytes: x starts at byte 13, character 11
    assert w is not None and locate(w, FileIndex(source)) is not None
    target = locate(w, FileIndex(source))
    assert target is not None and (target.col, target.name) == (11, "x")


def test_line_filters_that_keep_nothing_are_refused_before_mypy_runs(corpus, tmp_path, monkeypatch):
    from probes.gluecode import nulltoken

    def no_mypy(*args, **kwargs):
        raise AssertionError("mypy ran before the line filters were checked")

    monkeypatch.setattr(nulltoken, "check_corpus", no_mypy)
    with pytest.raises(CorpusError, match="--min-lines 9 is above --max-lines 3"):
        null_items(str(corpus), workdir=tmp_path, min_lines=9, max_lines=3)


def test_user_mistakes_name_the_fix(corpus, tmp_path, monkeypatch):
    with pytest.raises(InputError, match="size"):
        null_items(str(corpus), size=0, workdir=tmp_path, min_lines=1)
    with pytest.raises(CorpusError, match="NullToken needs Python files"):
        null_items("humaneval", workdir=tmp_path)
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "ok.py").write_text(textwrap.dedent("""\
        def double(x: int) -> int:
            return 2 * x
        """))
    with pytest.raises(CorpusError, match="larger corpus"):
        null_items(str(clean), workdir=tmp_path, min_lines=1)
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "mypy" else real(name, *a))
    with pytest.raises(AscError, match="requirements.txt"):
        null_items(str(corpus), workdir=tmp_path, min_lines=1)


@pytest.mark.slow
def test_a_slice_of_the_real_stdlib_gives_labelled_items(tmp_path):
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    names = ["argparse.py", "asyncore.py", "cgi.py", "cmd.py", "codeop.py", "ftplib.py", "getopt.py", "gettext.py",
             "imaplib.py", "mailbox.py", "mimetypes.py", "netrc.py", "nntplib.py", "optparse.py", "pdb.py",
             "pickletools.py", "pipes.py", "poplib.py", "pstats.py", "pty.py", "pydoc.py", "quopri.py", "sched.py",
             "shlex.py", "smtplib.py", "sndhdr.py", "socketserver.py", "sunau.py", "tabnanny.py", "tarfile.py",
             "telnetlib.py", "tempfile.py", "textwrap.py", "timeit.py", "trace.py", "uu.py", "wave.py",
             "webbrowser.py", "xdrlib.py", "zipapp.py"]
    folder = tmp_path / "stdlib_slice"
    folder.mkdir()
    for name in names:
        if (stdlib / name).is_file():
            shutil.copyfile(stdlib / name, folder / name)
    assert len(list(folder.iterdir())) >= 30
    items, prov = null_items(str(folder), workdir=tmp_path / "work")
    positives = [it for it in items if it.label != NO_WARNING]
    assert prov["copied_as"] == "corpus_copy" and prov["warnings"] >= 10
    assert len(positives) >= 5 and prov["negatives"] == round(len(positives) * 0.25)
    for it in positives:
        assert it.function[it.meta["start"]:it.meta["end"]] == it.label and it.label in it.candidates


def test_without_a_workdir_the_output_is_cached_in_the_app_cache(corpus, tmp_path, monkeypatch):
    monkeypatch.setenv("ASC_CACHE_DIR", str(tmp_path / "cache"))
    first = check_corpus(str(corpus))
    assert not first.cached and len(list((tmp_path / "cache" / "gluecode" / "mypy").glob("*.json"))) == 1
    assert check_corpus(str(corpus)).cached
