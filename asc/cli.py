"""The command-line runner every ``python -m`` entry point shares: logging, one-line errors, common options.

User mistakes (:class:`asc.errors.AscError`) exit with status 2 and one line on stderr, and so do usage
mistakes with a :class:`Parser`; unexpected failures exit 1 with one line (``--debug`` shows the traceback);
a closed pipe exits 0. Tables are written atomically as CSV or JSON by their suffix.

Arguments are checked when parsed, before anything is read or written, by the argparse types here (one place
for each rule): counts are :func:`positive_int` (``--limit 0`` is refused; at most :data:`MAX_COUNT`), counts
whose cost grows with them a :func:`count` capped by what they can use (``--n-boot``, ``--steps``), seeds
:func:`seed_int` (at most :data:`MAX_SEED`), lower bounds :func:`non_negative_int`, real options a finite
:func:`number` in their range (``nan`` and ``inf`` are refused), ``--device`` a :func:`device_name`, paths
:func:`path_text` (no NUL, not too long for the file system: :func:`asc.files.check_path_text`), output folders
:func:`out_folder` (not empty) and output tables :func:`out_table` (a ``.csv`` or ``.json`` file in an existing,
writable folder). :func:`read_source` reads a regular file of bounded size (4 bytes a character of
:data:`asc.explain.MAX_SOURCE_CHARS`) and says what anything else is (a folder, a named pipe, ``/dev/null``)
without blocking on it.
"""

from __future__ import annotations

import argparse
import logging
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from asc.atomic import write_atomic
from asc.concepts import AGGREGATES
from asc.confined import read_user_file
from asc.errors import AscError, InputError
from asc.files import check_out_file, check_path_text, shown

if TYPE_CHECKING:
    from asc.models import ModelBundle

__all__ = ["MAX_COUNT", "MAX_SEED", "Parser", "TABLE_SUFFIXES", "add_common", "add_model_options", "count",
           "device_name", "fmt", "load_bundle", "non_negative_int", "number", "out_folder", "out_table", "path_text",
           "positive_int", "read_source", "run", "seed_int", "stage_bar", "write_table"]

log = logging.getLogger("asc")

MAX_COUNT = 2**31 - 1  # any count option: the largest size numpy and torch index with int32 (costly counts cap lower)
MAX_SEED = 2**32 - 1  # numpy's RandomState (the causal refuters') takes no larger seed
TABLE_SUFFIXES = (".csv", ".json")  # what write_table writes: JSON records for .json, CSV for .csv


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


def load_bundle(args: argparse.Namespace, spec: str | None = None) -> ModelBundle:
    """Load ``spec`` (default: ``--model``) with the command's ``--trust-remote-code``, ``--device`` and
    ``--dtype``, logging the time."""
    from asc.models import load_model

    t0 = time.perf_counter()
    bundle = load_model(spec or args.model, trust_remote_code=args.trust_remote_code,
                        device=getattr(args, "device", "cpu"), dtype=getattr(args, "dtype", "float32"))
    log.info("loaded %s on %s (%s) in %.1f s", bundle.name, bundle.device, bundle.dtype, time.perf_counter() - t0)
    return bundle


def fmt(x: float | None, digits: int = 3) -> str:
    """A number for a table cell: ``-`` for missing or NaN."""
    return "-" if x is None or x != x else f"{x:.{digits}f}"


def write_table(table: Any, out: Path) -> Path:
    """Write a pandas table atomically: JSON records for ``.json``, CSV otherwise (InputError when it cannot be
    written, e.g. inside ``/proc``: ``--out`` elsewhere)."""
    try:
        if out.suffix.lower() == ".json":
            return write_atomic(out, lambda tmp: tmp.write_text(table.to_json(orient="records", indent=1)))
        return write_atomic(out, lambda tmp: table.to_csv(tmp, index=False))
    except OSError as err:
        raise InputError(f"cannot write {shown(out)} ({(err.strerror or str(err)).lower()}): give another --out, in "
                         "a folder you may write") from None


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose usage mistakes are one line on stderr and exit 2, like every other user mistake
    (subcommands' parsers are of the same class)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"error: {self.prog}: {message} (see {self.prog} --help)\n")


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


def add_model_options(p: argparse.ArgumentParser) -> None:
    """``--trust-remote-code`` (off by default), ``--device`` and ``--dtype`` for commands that load models."""
    from asc.device import DTYPES

    p.add_argument("--trust-remote-code", action="store_true", help="allow model code from the hub (off by default)")
    p.add_argument("--device", type=device_name, default="auto", metavar="{auto,cpu,cuda,cuda:N,mps}",
                   help="where the model runs (default auto: the first CUDA GPU, else mps, else cpu)")
    p.add_argument("--dtype", default="auto", choices=DTYPES,
                   help="weight precision (default auto: bfloat16 on CUDA, float16 on mps, float32 on cpu)")


def add_common(p: argparse.ArgumentParser) -> None:
    """The options of AsC-Eval commands: model, theta, window and alignment choices."""
    from asc.models import DEFAULT_MODEL

    p.add_argument("--model", default=DEFAULT_MODEL, help="embedded name, local folder, .gguf file or hub id")
    add_model_options(p)
    p.add_argument("--aggregate", default="median", choices=AGGREGATES, help="theta per node (default: median)")
    p.add_argument("--max-window", type=positive_int, default=None, help="longest window in tokens (default: min(context, 2048))")
    p.add_argument("--whitespace", default="enclosing", choices=("enclosing", "skip"))
    p.add_argument("--multi-leaf", default="all", choices=("all", "first"))
    p.add_argument("--zero-width", default="none", choices=("none", "next_token"))


def stage_bar(desc: str, quiet: bool) -> tuple[Callable[[str, int, int], None] | None, Callable[[], None]]:
    """A tqdm-driven ``on_progress(stage, done, total)`` callback and its ``close`` (None when quiet)."""
    if quiet:
        return None, lambda: None
    from tqdm import tqdm

    state: dict[str, Any] = {"bar": None, "stage": None}

    def update(stage: str, done: int, total: int) -> None:
        if stage != state["stage"]:
            if state["bar"] is not None:
                state["bar"].close()
            state["bar"], state["stage"] = tqdm(total=total, desc=f"{desc} {stage}", unit="it", leave=False), stage
        state["bar"].total = total
        state["bar"].n = done
        state["bar"].refresh()

    def close() -> None:
        if state["bar"] is not None:
            state["bar"].close()

    return update, close


def run(args: argparse.Namespace, user_errors: tuple[type[BaseException], ...] = (AscError,)) -> int:
    """Set up logging and run ``args.func(args)``: ``user_errors`` exit 2 with one line, others 1 (``--debug``
    re-raises). Shared by ``python -m asc``, ``python -m probes`` and ``python -m asc.study``."""
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if not args.verbose:
        from asc.paths import quiet_libraries

        quiet_libraries()  # no import of transformers here: 0.8 s that commands without a model do not need
    try:
        return args.func(args)
    except user_errors as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `| head`: the reader left, nothing to report
        sys.stderr.close()
        return 0
    except Exception as err:  # an unexpected failure: one line unless --debug
        if args.debug:
            raise
        print(f"error: {type(err).__name__}: {err} (run with --debug for the traceback)", file=sys.stderr)
        return 1
