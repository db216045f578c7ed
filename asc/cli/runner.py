"""What every command shares once its arguments are parsed: the runner, and the pieces of its report.

:func:`run` sets up logging and runs the command: user mistakes (:class:`asc.errors.AscError`) exit with status 2
and one line on stderr, and so do usage mistakes (:class:`asc.cli.args.Parser`); unexpected failures exit 1 with
one line (``--debug`` shows the traceback); a closed pipe exits 0. It is shared by ``python -m asc`` and ``python -m
probes``. :func:`write_table` writes a table atomically as CSV or JSON by its suffix, :func:`fmt` a number for a
table cell, and :func:`stage_bar` the progress bar of a long command.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from asc.atomic import write_atomic
from asc.errors import AscError, InputError
from asc.files import shown

__all__ = ["fmt", "main_of", "run", "stage_bar", "write_table"]

ProgressCallback = Callable[[str, int, int], None]  # on_progress(stage, done, total)


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


def stage_bar(desc: str, quiet: bool) -> tuple[ProgressCallback | None, Callable[[], None]]:
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
    re-raises). Shared by ``python -m asc`` and ``python -m probes``."""
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="%(levelname)s %(name)s: %(message)s")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    if not args.verbose:
        from asc.paths import quiet_libraries

        quiet_libraries()  # no import of transformers here: 0.8 s that commands without a model do not need
    try:
        status: int = args.func(args)
        return status
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


def main_of(parser: argparse.ArgumentParser, argv: list[str] | None) -> int:
    """Parse ``argv`` (default: the process's arguments) with ``parser``, :func:`run` the command, and after a success
    print the new names of old spellings it used (after the command's own output: an error stays one line)."""
    from asc.cli.args import say_renamed

    args = parser.parse_args(argv)
    status = run(args)
    if status == 0:
        say_renamed(args)
    return status
