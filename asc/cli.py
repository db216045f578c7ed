"""The command-line runner every ``python -m`` entry point shares: logging, one-line errors, common options.

User mistakes (:class:`asc.errors.AscError`) exit with status 2 and one line on stderr, and so do usage
mistakes with a :class:`Parser`; unexpected failures exit 1 with one line (``--debug`` shows the traceback);
a closed pipe exits 0. Tables are written atomically as CSV or JSON by their suffix.

Arguments are checked when parsed, before anything is read or written, by the argparse types here (one place
for each rule): counts are :func:`positive_int` (``--limit 0`` is refused), seeds and lower bounds
:func:`non_negative_int`, ``--device`` a :func:`device_name`, paths :func:`path_text` (no NUL, not too long
for the file system: :func:`asc.files.check_path_text`) and output tables :func:`out_table` (an existing,
writable folder). :func:`read_source` reads a regular file of bounded size (4 bytes a character of
:data:`asc.explain.MAX_SOURCE_CHARS`) and says what anything else is (a folder, a named pipe, ``/dev/null``)
without blocking on it.
"""

from __future__ import annotations

import argparse
import logging
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

__all__ = ["Parser", "add_common", "add_model_options", "device_name", "fmt", "load_bundle",
           "non_negative_int", "out_table", "path_text", "positive_int", "read_source", "run", "stage_bar",
           "write_table"]

log = logging.getLogger("asc")

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
        if out.suffix == ".json":
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


def _whole(text: str, least: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"must be at least {least}, got {value}")
    return value


def positive_int(text: str) -> int:
    """argparse type of counts (``--limit``, ``--batch-size``, ``--n-boot``): a whole number of at least 1."""
    return _whole(text, 1)


def non_negative_int(text: str) -> int:
    """argparse type of seeds and lower bounds (``--seed``, ``--min-lines``): a whole number of at least 0."""
    return _whole(text, 0)


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


def out_table(text: str) -> str:
    """argparse type of an output table's ``--out``: a file in an existing folder this user may write."""
    return _argument(check_out_file, text)


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
