"""mypy run offline over a corpus copy, its JSON output parsed, and the possible None dereferences picked out.

The NullToken task (:mod:`probes.gluecode.nulltoken`) needs a static analyzer's warnings, as the glueCode paper
(section 2.4.5, appendix B.5) took Infer's null-dereference reports for Java. This module runs **mypy**
(``sys.executable -m mypy``, the one in this environment) with ``--check-untyped-defs --output json`` over a
corpus's Python files and keeps the warnings that say a value typed ``X | None`` (or ``None``) is used as if it
could not be None. Why mypy: it is pure Python on PyPI, already this project's type checker (pinned in
requirements.txt), and runs offline; basedpyright needs Node.js and ty a Rust binary downloaded at install.

**The copy.** The corpus is copied into a temporary folder and checked there. Stdlib modules go under another
top-level package, ``stdlib_copy`` (``json/decoder.py`` is checked as ``stdlib_copy.json.decoder``), so mypy
does not mistake them for its own typeshed stubs (it refuses a file that shadows a stdlib module). Any corpus
whose top-level names clash with a stdlib module name (a user folder with a ``json.py``), or that has an
``__init__.py`` at its top, goes under ``corpus_copy`` the same way; others (``algorithms``) keep their layout,
so their absolute imports resolve to the copy. Every copied folder gets an ``__init__.py``. Files that do not
parse with this Python, whose path is not a dotted module name, or that a package of the same name shadows are
skipped and listed. Flags: :data:`MYPY_FLAGS` (no config file, no site packages, imports outside the copy are
followed silently or ignored, no mypy cache: our own cache keeps the output, keyed by the files' SHA-256,
mypy's version, Python's version and the flags). Measured here (Python 3.11, mypy 2.4.1, 2 cores): the
stdlib's 578 files take 10-20 s (6,240 diagnostics, 655 kept), ``algorithms``' 401 files about 2 s (252, 36).

**The warning set** (:func:`none_warning`), each with where its None value stands:

* ``union-attr``: ``Item "None" of "X | None" has no attribute "y"`` — an attribute read on the value
  (``m.group``), or an implicit dunder (``__iter__`` of a ``for``, ``__enter__``/``__exit__`` of a ``with``,
  ``__delitem__`` of a ``del``): the value is the object before ``.y``, or the whole expression mypy points at;
* ``index``: ``Value of type "X | None" is not indexable`` and ``Unsupported target for indexed assignment
  ("X | None")``: the value is the object before ``[``;
* ``operator``: ``Unsupported operand types for OP ("None" and "T")`` (or ``("T" and "None")``), ``Unsupported
  left operand type for OP ("None")``, ``Unsupported right operand type for in ("X | None")``, ``Unsupported
  operand type for unary OP ("X | None")``: the operand that may be None (mypy's "Left/Right operand is of type"
  hint decides when present, and its type must hold None);
* ``misc``: ``"None" not callable`` (the callee) and ``"None" object is not iterable`` (an unpacked value).

Left out: arguments of type ``X | None`` passed where ``X`` is expected (``arg-type``, ``call-overload``), bad
assignments, awaits and every other code — they are type mismatches, not uses of a None value. The labels mean
"the type checker warns here", not proven bugs: mypy does not know which paths run (an attribute set to None in
``__init__`` and filled later is flagged at every use), unlike Infer's path-sensitive analysis.
"""

from __future__ import annotations

import ast
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import stat
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from asc.atomic import write_atomic
from asc.caches import check_file, private_folder
from asc.confined import builtin_folder, corpus_roots, open_path, read_fd, walk_files
from asc.corpus.sources import MAX_FILES, MAX_SOURCE_BYTES, check_corpus_spec
from asc.errors import AscError, CorpusError
from asc.paths import cache_dir, untrusted_environment

__all__ = ["CHECKER", "MYPY_FLAGS", "CheckResult", "CheckerError", "Diagnostic", "NoneWarning", "check_corpus",
           "checker_command", "corpus_texts", "mypy_version", "none_warning", "parse_mypy_json", "union_has_none"]

CHECKER = "mypy"
MYPY_FLAGS = ("--output", "json", "--check-untyped-defs", "--no-incremental", f"--cache-dir={os.devnull}",
              "--config-file=", "--follow-imports=silent", "--ignore-missing-imports", "--no-site-packages",
              "--show-column-numbers", "--show-error-end", "--no-native-parser", "--no-error-summary",
              "--hide-error-context")  # --no-native-parser: columns are UTF-8 byte offsets, as ``ast`` gives them
TIMEOUT_S = 3600
_SKIP_DIRS = {"test", "tests", "site-packages", "dist-packages", "idlelib", "turtledemo", "__pycache__", "lib2to3"}
_CACHE_VERSION = 1


class CheckerError(AscError):
    """mypy is missing, failed, or its output cannot be read."""


@dataclass(frozen=True)
class Diagnostic:
    """One line of mypy's ``--output json``; ``file`` is the corpus-relative path once mapped back."""

    file: str
    line: int
    column: int  # 0-based; UTF-8 bytes with --no-native-parser
    end_line: int
    end_column: int
    message: str
    code: str | None = None
    hint: str | None = None
    severity: str = "error"


@dataclass(frozen=True)
class NoneWarning:
    """A kept warning: ``kind`` (attr, index, operator, call, iter) and where the maybe-None value stands:
    ``value`` (the whole expression mypy points at, or the object before ``.attr``/``[``/``(``), ``left``,
    ``right`` or ``operand``; ``attr`` for attribute warnings, ``op`` for operator warnings."""

    diagnostic: Diagnostic
    kind: str
    side: str = "value"
    attr: str = ""
    op: str = ""


@dataclass
class CheckResult:
    """mypy's diagnostics for a corpus and how they were obtained."""

    base: Path  # the folder the corpus-relative paths start from
    files: list[str]  # corpus-relative paths checked
    skipped: dict[str, str]  # path -> why it was not checked
    diagnostics: list[Diagnostic]
    package: str  # the wrapper package of the copy ("" when the layout was kept)
    mypy: str
    seconds: float  # mypy's wall time when it ran (the cached value on a cache hit)
    cached: bool = False
    flags: tuple[str, ...] = field(default=MYPY_FLAGS)
    texts: dict[str, bytes] = field(default_factory=dict, repr=False)  # path -> the bytes read once and checked


def union_has_none(type_text: str) -> bool:
    """True when mypy's type text is ``None`` or a union with a ``None`` member at the top level
    (``dict[str, int | None]`` is not)."""
    depth, start, parts = 0, 0, []
    for i, ch in enumerate(type_text):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append(type_text[start:i])
            start = i + 1
    parts.append(type_text[start:])
    return any(p.strip().strip('"') == "None" for p in parts)


_ATTR = re.compile(r'Item "None" of (?P<t>.+) has no attribute "(?P<attr>[^"]+)"(?: \(not iterable\))?')
_INDEX = re.compile(r'Value of type "(?P<t>.+)" is not indexable|Unsupported target for indexed assignment \("(?P<t2>.+)"\)')
_BINOP = re.compile(r'Unsupported operand types for (?P<op>\S+) \("(?P<left>.+)" and "(?P<right>.+)"\)')
_LEFT = re.compile(r'Unsupported left operand type for (?P<op>\S+) \("(?P<t>.+)"\)')
_RIGHT = re.compile(r'Unsupported right operand type for (?P<op>in|not in) \("(?P<t>.+)"\)')
_HINT = re.compile(r'(?P<side>Left|Right) operand is of type "(?P<t>.+)"')
_UNARY = re.compile(r'Unsupported operand type for (?:unary )?(?P<op>[-+~]|not) \("(?P<t>.+)"\)')


def none_warning(d: Diagnostic) -> NoneWarning | None:
    """The diagnostic as a possible None dereference of the module doc's set, or None when it is not one."""
    msg, hint = d.message, d.hint or ""
    if d.code == "union-attr" and (m := _ATTR.fullmatch(msg)):
        return NoneWarning(d, "attr", attr=m["attr"])
    if d.code == "index" and (m := _INDEX.fullmatch(msg)) and union_has_none(m["t"] or m["t2"]):
        return NoneWarning(d, "index")
    if d.code == "operator":
        if m := _BINOP.fullmatch(msg):
            if h := _HINT.fullmatch(hint):  # mypy names the operand whose union holds None
                return NoneWarning(d, "operator", h["side"].lower(), op=m["op"]) if union_has_none(h["t"]) else None
            if union_has_none(m["left"]) or union_has_none(m["right"]):
                return NoneWarning(d, "operator", "left" if union_has_none(m["left"]) else "right", op=m["op"])
        if (m := _LEFT.fullmatch(msg)) and union_has_none(m["t"]):
            return NoneWarning(d, "operator", "left", op=m["op"])
        if (m := _RIGHT.fullmatch(msg)) and union_has_none(m["t"]):
            return NoneWarning(d, "operator", "right", op=m["op"])
        if (m := _UNARY.fullmatch(msg)) and union_has_none(m["t"]):
            return NoneWarning(d, "operator", "operand", op=m["op"])
    if d.code == "misc" and msg == '"None" not callable':
        return NoneWarning(d, "call")
    if d.code == "misc" and msg == '"None" object is not iterable':
        return NoneWarning(d, "iter")
    return None


def parse_mypy_json(text: str) -> list[Diagnostic]:
    """mypy's ``--output json`` lines as diagnostics (notes included; lines that are not JSON objects, such as
    a summary, are ignored). A line that starts like JSON but does not parse is a :class:`CheckerError`."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            row = json.loads(line)
            out.append(Diagnostic(file=str(row["file"]), line=int(row["line"]), column=int(row["column"]),
                                  end_line=int(row.get("end_line") or row["line"]),
                                  end_column=int(row.get("end_column") or row["column"]),
                                  message=str(row["message"]), code=row.get("code"), hint=row.get("hint"),
                                  severity=str(row.get("severity", "error"))))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as err:
            raise CheckerError(f"mypy output line {n} is not a diagnostic ({type(err).__name__}: {err}): "
                               f"{line[:120]!r}; use the pinned mypy (requirements.txt)") from None
    return out


def mypy_version() -> str:
    """The installed mypy's version; a :class:`CheckerError` naming the fix when it is missing."""
    if importlib.util.find_spec("mypy") is None:
        raise CheckerError("the NullToken task needs mypy: run `pip install -r requirements.txt` (mypy==2.4.1)")
    return importlib.metadata.version("mypy")


def corpus_texts(spec: str, roots: Sequence[Path] | None = None) -> tuple[Path, dict[str, bytes]]:
    """The base folder and the ``.py`` files (path relative to it, as corpus snippets' ``origin`` -> bytes, sorted)
    of a corpus spec: ``stdlib``, ``algorithms``, a folder or a ``.py`` file (the folders :mod:`asc.corpus.sources`
    skips are skipped, and files whose opened descriptor lies outside the folder). HumanEval and ``.jsonl`` corpora
    hold no files a type checker can read: a :class:`CorpusError`. Each file is read once, confined to ``roots``
    on the opened descriptor (:mod:`asc.confined`): the bytes hashed are the bytes mypy checks."""
    check_corpus_spec(spec, roots)
    allowed = corpus_roots(spec, roots)
    folder = builtin_folder(spec)  # stdlib, algorithms
    builtin = folder is not None
    if folder is None:
        root = base = Path(spec).expanduser()
    else:
        root, base = folder, folder if spec == "stdlib" else folder.parent
    wrong = CorpusError(f"corpus {spec!r}: NullToken needs Python files to type-check; give stdlib, algorithms, "
                        "a folder of .py files or a .py file (not humaneval or a .jsonl)")
    try:
        fd = open_path(root, allowed)
    except OSError:
        raise wrong from None
    try:
        mode = os.fstat(fd).st_mode
        if not builtin and stat.S_ISREG(mode) and root.suffix == ".py":
            return root.parent, {root.name: read_fd(fd, root, MAX_SOURCE_BYTES)}
        if not stat.S_ISDIR(mode):
            raise wrong
        prefix = "" if base == root else f"{root.name}/"
        texts: dict[str, bytes] = {}
        for rel, data in walk_files(fd, root, allowed, keep_dir=lambda d: d not in _SKIP_DIRS and not d.startswith("."),
                                    keep_file=lambda name: name.endswith(".py"), max_bytes=MAX_SOURCE_BYTES,
                                    inside_top=True):
            texts[prefix + rel] = data
            if len(texts) > MAX_FILES:
                raise CorpusError(f"{root} holds more than {MAX_FILES:,} .py files: give a smaller folder")
        return base, dict(sorted(texts.items()))
    finally:
        os.close(fd)


def _bytes_writer(data: bytes) -> Callable[[Path], int]:
    return lambda path: path.write_bytes(data)


def _skip_reason(rel: str, text: bytes, folders: set[str]) -> str:
    parts = rel[:-3].split("/")
    if not all(p.isidentifier() for p in parts):
        return "its path is not a dotted module name"
    if rel[:-3] in folders:
        return "a package of the same name exists"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarning of old escapes
            ast.parse(text)
    except (SyntaxError, ValueError) as err:
        return f"it does not parse with this Python ({type(err).__name__})"
    return ""


def _key(stdlib: bool, digests: dict[str, str], version: str) -> str:
    blob = json.dumps({"v": _CACHE_VERSION, "mypy": version, "python": list(sys.version_info[:3]),
                       "flags": MYPY_FLAGS, "stdlib": stdlib, "files": sorted(digests.items())})
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


def checker_command(targets: Sequence[str]) -> list[str]:
    """The command that type-checks ``targets``: ``python -I -m mypy``. ``-I`` (isolated) keeps the working
    directory and the script's folder off ``sys.path`` and ignores ``PYTHON*`` variables and the user's site
    folder, so no file of the corpus (a ``mypy.py``, ``typing_extensions.py``, ``sitecustomize.py``,
    ``usercustomize.py``...) can stand in for a module the interpreter or mypy imports."""
    return [sys.executable, "-I", "-m", "mypy", *MYPY_FLAGS, *targets]


def _run_mypy(src: Path, targets: list[str]) -> tuple[str, float]:
    """mypy over ``targets`` (paths relative to ``src``, the copy), run isolated (:func:`checker_command`) from
    an empty folder beside the copy, never from the copy itself; the paths in its output are made relative to
    ``src`` again."""
    run_dir = src.parent / "run"
    run_dir.mkdir(mode=0o700)
    cmd = checker_command([str(src / t) for t in targets])
    start = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=run_dir, capture_output=True, text=True, timeout=TIMEOUT_S,
                              env=untrusted_environment())
    except subprocess.TimeoutExpired:
        raise CheckerError(f"mypy ran longer than {TIMEOUT_S} s: give a smaller corpus (a folder)") from None
    seconds = time.perf_counter() - start
    if proc.returncode not in (0, 1):  # 2: a blocking error (a crash, a file it cannot read)
        tail = (proc.stderr.strip() or proc.stdout.strip())[-600:]
        raise CheckerError(f"mypy failed (exit {proc.returncode}): {tail}; remove the file it names from the "
                           "corpus folder, or check that mypy==2.4.1 is installed")
    return proc.stdout, seconds


def _relative(file: str, copies: set[str]) -> str:
    """mypy's path of a checked file, relative to the copy's folder (mypy prints the paths it was given)."""
    file = file.replace(os.sep, "/")
    for copy in copies:
        if file.startswith(copy):
            return file[len(copy):]
    return file


def check_corpus(spec: str, workdir: str | Path | None = None, roots: Sequence[Path] | None = None) -> CheckResult:
    """Run mypy over a copy of the corpus (see the module doc) and return its diagnostics with corpus-relative
    paths. The result is cached under ``workdir`` (default: ``<cache_dir>/gluecode``), keyed by the files'
    digests, mypy's and Python's versions and the flags; a hit does not run mypy."""
    version = mypy_version()
    base, texts = corpus_texts(spec, roots)
    rels = list(texts)
    key = _key(spec == "stdlib", {rel: hashlib.sha256(texts[rel]).hexdigest() for rel in rels}, version)
    if workdir is None:  # the app's cache: private folders, files nobody else wrote (asc.caches)
        private_folder(cache_dir())
        folder = private_folder(private_folder(cache_dir() / "gluecode") / "mypy")
    else:
        folder = Path(workdir) / "mypy"
    cache = folder / f"{key[:24]}.json"
    if cache.is_file():
        if workdir is None:
            check_file(cache)
        try:
            rec = json.loads(cache.read_text(encoding="utf-8"))
            if rec.get("key") == key:
                return CheckResult(base, list(rec["files"]), dict(rec["skipped"]),
                                   [Diagnostic(**d) for d in rec["diagnostics"]], str(rec["package"]), version,
                                   float(rec["seconds"]), cached=True, texts=texts)
        except (OSError, ValueError, TypeError, KeyError):
            pass  # a damaged cache file is rebuilt
    folders = {rel.rsplit("/", 1)[0] for rel in rels if "/" in rel}
    folders |= {f.rsplit("/", i)[0] for f in list(folders) for i in range(1, f.count("/") + 1)}
    skipped = {rel: why for rel in rels if (why := _skip_reason(rel, texts[rel], folders))}
    files = [rel for rel in rels if rel not in skipped]
    if not files:
        raise CorpusError(f"corpus {spec!r} has no Python file mypy can check" +
                          (f" ({next(iter(skipped))}: {next(iter(skipped.values()))})" if skipped else ""))
    tops = {rel.split("/")[0].removesuffix(".py") for rel in files}
    clash = spec == "stdlib" or bool(tops & (set(sys.stdlib_module_names) | {"builtins", "typing_extensions",
                                                                              "__init__"}))
    package = ("stdlib_copy" if spec == "stdlib" else "corpus_copy") if clash else ""
    if workdir is not None:
        Path(workdir).mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="asc-mypy-", dir=workdir) as tmp:
        src = Path(tmp) / "copy"  # the corpus's copy; mypy runs from Path(tmp) / "run" (see _run_mypy)
        src.mkdir(mode=0o700)
        top = src / package if package else src
        for rel in files:  # the bytes read once (never the path again), into a scratch copy
            write_atomic(top / rel, _bytes_writer(texts[rel]))
        for folder in [top, *(p for p in top.rglob("*") if p.is_dir())]:
            if folder != src and not (folder / "__init__.py").exists():
                (folder / "__init__.py").touch()
        targets = [package] if package else sorted({rel.split("/")[0] for rel in files})
        stdout, seconds = _run_mypy(src, targets)
        copy = {str(src.resolve()).replace(os.sep, "/") + "/", str(src).replace(os.sep, "/") + "/"}
    prefix = f"{package}/" if package else ""
    diagnostics = [Diagnostic(**{**asdict(d), "file": _relative(d.file, copy).removeprefix(prefix)})
                   for d in parse_mypy_json(stdout)]
    record = {"key": key, "checker": CHECKER, "mypy": version, "flags": list(MYPY_FLAGS), "spec": spec,
              "package": package, "files": files, "skipped": skipped, "seconds": seconds,
              "diagnostics": [asdict(d) for d in diagnostics]}
    write_atomic(cache, lambda p: p.write_text(json.dumps(record), encoding="utf-8"))
    return CheckResult(base, files, skipped, diagnostics, package, version, seconds, texts=texts)

