"""The parsing every command line shares (``python -m asc`` and ``python -m probes``): one place for each rule.

Arguments are checked when parsed, before anything is read or written, by the argparse types here: counts are
:func:`positive_int` (``--limit 0`` is refused; at most :data:`MAX_COUNT`), counts whose cost grows with them a
:func:`count` capped by what they can use (``--n-boot``, ``--steps``), seeds :func:`seed_int` (at most
:data:`MAX_SEED`), lower bounds :func:`non_negative_int`, real options a finite :func:`number` in their range
(``nan`` and ``inf`` are refused), positions :func:`line_col` (``LINE:COL``, both from 1), ``--device`` a
:func:`device_name`, paths :func:`path_text` (no NUL, not too long for the file system:
:func:`asc.files.check_path_text`), output folders :func:`out_folder` (not empty) and output tables :func:`out_table`
(a ``.csv`` or ``.json`` file in an existing, writable folder). A refusal is one line and exit 2 (:class:`Parser`).

Files: :func:`add_source_file` is the ``FILE`` argument (``-``: standard input), :func:`read_source` reads it (a
regular file of bounded size, 4 bytes a character of :data:`asc.explain.MAX_SOURCE_CHARS`; a folder, a named pipe or
``/dev/null`` is named without blocking on it) and :func:`source_offset` places its ``--at LINE:COL``
(:func:`asc.positions.offset_at`). Models: :func:`add_model_options` (``--trust-remote-code``, ``--device``,
``--dtype``), :func:`add_scoring_options` (those, ``--model`` and AsC-Eval's theta, window and alignment:
:func:`align_options`) and :func:`load_bundle`, which loads what they name. Renamed spellings: :class:`RenamedFlag`
(a flag's old spelling) and :class:`Subcommands` (``add_renamed``: a subcommand's old name) still take the old
spelling, and :func:`say_renamed` prints the new name once on stderr (the ``main`` functions call it once the command
succeeded: an error stays one line).
"""

from __future__ import annotations

import argparse
import logging
import math
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from asc.concepts import AGGREGATES
from asc.confined import read_user_file
from asc.errors import InputError
from asc.files import check_out_file, check_path_text, shown
from asc.positions import offset_at

if TYPE_CHECKING:
    from asc.align import AlignOptions
    from asc.models import ModelBundle

__all__ = ["MAX_COUNT", "MAX_SEED", "TABLE_SUFFIXES", "Parser", "RenamedFlag", "Subcommands", "add_bootstrap_options",
           "align_options",
           "add_model_options", "add_scoring_options", "add_source_file", "count", "device_name", "line_col",
           "load_bundle", "non_negative_int", "number", "out_folder", "out_table", "path_text", "positive_int",
           "read_source", "say_renamed", "seed_int", "source_offset", "subcommands"]

log = logging.getLogger("asc")

MAX_COUNT = 2**31 - 1  # any count option: the largest size numpy and torch index with int32 (costly counts cap lower)
MAX_SEED = 2**32 - 1  # numpy's RandomState (the causal refuters') takes no larger seed
TABLE_SUFFIXES = (".csv", ".json")  # what asc.cli.runner.write_table writes: JSON records for .json, CSV for .csv
_RENAMED = "renamed_notices"  # the Namespace attribute where the old spellings used are noted for say_renamed


# ------------------------------------------------------------------------------------------ parsers


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage mistakes are one line on stderr and exit 2, like every other user mistake
    (subcommands' parsers are of the same class, and its subcommands are :class:`Subcommands`)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.register("action", "parsers", Subcommands)

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


def _note(namespace: argparse.Namespace, old: str, new: str) -> None:
    notes: list[str] = getattr(namespace, _RENAMED, [])
    setattr(namespace, _RENAMED, [*notes, f"{old} is now {new}"])


if TYPE_CHECKING:
    _SubParsersAction = argparse._SubParsersAction[argparse.ArgumentParser]
else:  # not subscriptable at run time
    _SubParsersAction = argparse._SubParsersAction


class Subcommands(_SubParsersAction):
    """The subcommands of a :class:`Parser`; :meth:`add_renamed` adds one that also answers to its old name."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.renamed: dict[str, str] = {}

    def add_renamed(self, name: str, old: str, **kwargs: Any) -> argparse.ArgumentParser:
        """``add_parser(name)`` that also takes ``old`` (listed as its alias in ``--help``)."""
        self.renamed[old] = name
        parser: argparse.ArgumentParser = self.add_parser(name, aliases=[old], **kwargs)
        return parser

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        super().__call__(parser, namespace, values, option_string)
        used = values[0] if isinstance(values, Sequence) and not isinstance(values, str) and values else None
        if used in self.renamed:
            if self.dest is not argparse.SUPPRESS:
                setattr(namespace, self.dest, self.renamed[used])
            _note(namespace, f"`{parser.prog} {used}`", f"`{parser.prog} {self.renamed[used]}`")


def subcommands(parser: argparse.ArgumentParser) -> Subcommands:
    """The required subcommands of a :class:`Parser` (their name in ``args.command``)."""
    sub = parser.add_subparsers(dest="command", required=True)
    if not isinstance(sub, Subcommands):
        raise TypeError(f"{parser.prog}: subcommands need a Parser, not a {type(parser).__name__}")
    return sub


class RenamedFlag(argparse.Action):
    """A flag (``store_true``) whose first option string is its name and the others old spellings, still taken:
    ``add_argument("--per-layer", "--layers", action=RenamedFlag, help=...)``."""

    def __init__(self, option_strings: Sequence[str], dest: str, default: Any = False, help: str | None = None,
                 **kwargs: Any) -> None:
        old = ", ".join(option_strings[1:])
        super().__init__(option_strings, dest, nargs=0, default=default,
                         help=None if help is None else f"{help} ({old}: its old name)", **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: str | Sequence[Any] | None, option_string: str | None = None) -> None:
        setattr(namespace, self.dest, True)
        if option_string is not None and option_string != self.option_strings[0]:
            _note(namespace, f"`{option_string}`", f"`{self.option_strings[0]}`")


def say_renamed(args: argparse.Namespace) -> None:
    """Print, once each, the new names of the old spellings ``args`` was parsed from (stderr, one line each)."""
    for note in dict.fromkeys(getattr(args, _RENAMED, [])):
        print(f"note: {note} (the old name still works)", file=sys.stderr)


# ------------------------------------------------------------------------------------------ argument types


def _whole(text: str, least: int, most: int = MAX_COUNT, why: str = "") -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a whole number") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
    if value > most:
        raise argparse.ArgumentTypeError(f"must be at most {most:,}{f' ({why})' if why else ''}, got {value:,}")
    return value


def positive_int(text: str) -> int:
    """argparse type of counts (``--limit``, ``--batch-size``, ``--top``): a whole number from 1 to
    :data:`MAX_COUNT` (a count that costs per unit is a :func:`count` with its own cap)."""
    return _whole(text, 1)


def non_negative_int(text: str) -> int:
    """argparse type of lower bounds (``--min-lines``): a whole number from 0 to :data:`MAX_COUNT`."""
    return _whole(text, 0)


def seed_int(text: str) -> int:
    """argparse type of ``--seed``: a whole number from 0 to :data:`MAX_SEED`."""
    return _whole(text, 0, MAX_SEED, "what numpy's seeds take")


def count(most: int, why: str) -> Callable[[str], int]:
    """argparse type of a count whose cost grows with it: a whole number from 1 to ``most``, what it can use
    (``why`` says so in the refusal: one line, exit 2, before anything loads)."""
    def parse(text: str) -> int:
        return _whole(text, 1, most, why)

    parse.__name__ = "count"
    return parse


def number(least: float, most: float = math.inf, *, above: bool = False, below: bool = False) -> Callable[[str], float]:
    """argparse type of a real option: a finite number from ``least`` to ``most`` (``above``/``below``: excluding
    that end); ``nan``, ``inf`` and numbers outside are refused, naming the range."""
    span = (f"{'above' if above else 'at least'} {least:g}" + ("" if most == math.inf else
            f" and {'below' if below else 'at most'} {most:g}"))

    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text[:40]!r} is not a number: give one {span}") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number: give one {span}")
        if value < least or value > most or (above and value == least) or (below and value == most):
            raise argparse.ArgumentTypeError(f"must be {span}, got {value:g}")
        return value

    parse.__name__ = "number"
    return parse


def line_col(text: str) -> tuple[int, int]:
    """argparse type of ``--at``: ``LINE:COL``, both counted from 1 (the column in characters); whether the
    position is inside the file is :func:`source_offset`'s to say, once the file is read."""
    try:
        line, col = (int(v) for v in text.split(":"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not LINE:COL (e.g. 12:5)") from None
    if line < 1 or col < 1:
        raise argparse.ArgumentTypeError(f"{text!r}: lines and columns count from 1")
    return line, col


def _argument(check: Callable[[str], object], text: str) -> str:
    """``text`` once ``check(text)`` passed; its InputError as argparse's usage error (one line, exit 2)."""
    try:
        check(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def device_name(text: str) -> str:
    """argparse type of ``--device``: a name :func:`asc.device.check_names` takes (``""`` is refused, not ``auto``)."""
    from asc.device import check_names

    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give auto, cpu, cuda, cuda:N or mps (or leave --device out: auto)")
    return check_names(_argument(check_names, text), "auto")[0]


def path_text(text: str) -> str:
    """argparse type of paths: refused when no file system takes the text (:func:`asc.files.check_path_text`)."""
    return _argument(check_path_text, text)


def out_folder(text: str) -> str:
    """argparse type of an output folder's ``--out``: a path (:func:`path_text`), not empty (which is the current
    folder)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("is empty: give the folder to write into, e.g. runs/NAME")
    return path_text(text)


def out_table(text: str) -> str:
    """argparse type of an output table's ``--out``: a ``.csv`` or ``.json`` file (:data:`TABLE_SUFFIXES`) in an
    existing folder this user may write."""
    _argument(check_out_file, text)
    if Path(text).suffix.lower() not in TABLE_SUFFIXES:
        raise argparse.ArgumentTypeError(f"{text[:80]!r}: tables are written as {' or '.join(TABLE_SUFFIXES)}: give a "
                                         f"file name ending in one of them, e.g. table.csv")
    return text


# ------------------------------------------------------------------------------------------ source files


def add_source_file(p: argparse.ArgumentParser) -> None:
    """The ``FILE`` argument of the commands that read one snippet (:func:`read_source` reads it)."""
    p.add_argument("file", help="source file, or - for standard input")


def read_source(path: str, max_bytes: int | None = None) -> str:
    """The UTF-8 text of a regular file of at most ``max_bytes`` (``-``: standard input), or an InputError naming
    the fix (what the path is instead: a folder, a named pipe, a device; too large; not UTF-8; empty). By default
    the most ``explain`` takes: :data:`asc.explain.MAX_SOURCE_CHARS` characters of up to 4 bytes (UTF-8)."""
    from asc.explain import MAX_SOURCE_CHARS

    max_bytes = 4 * MAX_SOURCE_CHARS if max_bytes is None else max_bytes
    too_big = f"at most {MAX_SOURCE_CHARS:,} characters are explained; give a single function or a smaller file"
    if path == "-":
        data = sys.stdin.buffer.read(max_bytes + 1)
        name = "standard input"
        if len(data) > max_bytes:
            raise InputError(f"standard input has more than {max_bytes:,} bytes: {too_big}")
    else:
        data = read_user_file(path, max_bytes, "file", fix="give a source file, or - to read standard input",
                              size_fix=too_big)
        name = shown(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{name} is not valid UTF-8 (byte {err.start}: {err.reason}); "
                         "re-save it as UTF-8, e.g. `iconv -f latin1 -t utf-8`") from None
    if not text.strip():
        raise InputError(f"{name} is empty: give a file with some code")
    return text


def source_offset(text: str, at: tuple[int, int]) -> int:
    """The character offset of ``--at LINE:COL`` (:func:`line_col`) in the text read from ``FILE``, or an
    InputError naming the snippet's extent (:func:`asc.positions.offset_at`)."""
    line, col = at
    return offset_at(text, line, col, f"--at {line}:{col}")


# ------------------------------------------------------------------------------------------ model options


def add_model_options(p: argparse.ArgumentParser) -> None:
    """``--trust-remote-code`` (off by default), ``--device`` and ``--dtype`` for commands that load models."""
    from asc.device import DTYPES

    p.add_argument("--trust-remote-code", action="store_true", help="allow model code from the hub (off by default)")
    p.add_argument("--device", type=device_name, default="auto", metavar="{auto,cpu,cuda,cuda:N,mps}",
                   help="where the model runs (default auto: the first CUDA GPU, else mps, else cpu)")
    p.add_argument("--dtype", default="auto", choices=DTYPES,
                   help="weight precision (default auto: bfloat16 on CUDA, float16 on mps, float32 on cpu)")


def add_scoring_options(p: argparse.ArgumentParser) -> None:
    """The options of the commands that score code with AsC-Eval: ``--model`` and :func:`add_model_options`, theta
    (``--aggregate``), the window and the alignment choices (:class:`asc.align.AlignOptions`)."""
    from asc.models import DEFAULT_MODEL

    p.add_argument("--model", default=DEFAULT_MODEL, help="embedded name, local folder, .gguf file or hub id")
    add_model_options(p)
    p.add_argument("--aggregate", default="median", choices=AGGREGATES, help="theta per node (default: median)")
    p.add_argument("--max-window", type=positive_int, default=None, help="longest window in tokens (default: min(context, 2048))")
    p.add_argument("--whitespace", default="enclosing", choices=("enclosing", "skip"))
    p.add_argument("--multi-leaf", default="all", choices=("all", "first"))
    p.add_argument("--zero-width", default="none", choices=("none", "next_token"))


def align_options(args: argparse.Namespace) -> AlignOptions:
    """The alignment choices :func:`add_scoring_options` parsed, as :class:`asc.align.AlignOptions`."""
    from asc.align import AlignOptions

    return AlignOptions(whitespace=args.whitespace, multi_leaf=args.multi_leaf, zero_width=args.zero_width)


def add_bootstrap_options(p: argparse.ArgumentParser) -> None:
    """``--n-boot``, ``--seed`` and ``--bootstrap`` of the commands that summarize runs."""
    from asc.corpus.bootstrap import MAX_N_BOOT, METHODS

    p.add_argument("--n-boot", type=count(MAX_N_BOOT, "more resamples no longer move the interval"), default=500,
                   help="bootstrap resamples for the summary")
    p.add_argument("--seed", type=seed_int, default=0, help="bootstrap seed")
    p.add_argument("--bootstrap", default="snippet", choices=METHODS,
                   help="snippet: resample snippets (default; nodes of one snippet are not independent); node: "
                        "resample nodes, as the paper's Table I")


def load_bundle(args: argparse.Namespace, spec: str | None = None) -> ModelBundle:
    """Load ``spec`` (default: ``--model``) with the command's ``--trust-remote-code``, ``--device`` and
    ``--dtype``, logging the time."""
    from asc.models import load_model

    t0 = time.perf_counter()
    bundle = load_model(spec or args.model, trust_remote_code=args.trust_remote_code,
                        device=getattr(args, "device", "cpu"), dtype=getattr(args, "dtype", "float32"))
    log.info("loaded %s on %s (%s) in %.1f s", bundle.name, bundle.device, bundle.dtype, time.perf_counter() - t0)
    return bundle
