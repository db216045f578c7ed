"""The command line ``python -m asc {models,explain,eval,compare,causal,branch,attribute,intervene,attribute-corpus}``.

One module per subcommand holds its parser and its body (``add_parser(sub)`` and ``execute(args)``);
:func:`build_parser` gathers them under the top-level ``-v``/``--debug`` options, and :func:`main` parses, runs the
command (:func:`asc.cli.runner.run`) and, when it succeeded, says the new name of any old spelling used, once, on
stderr (``--layers`` is now ``--per-layer``). The parsing they share (argument types, files, ``LINE:COL`` positions, model options)
is :mod:`asc.cli.args`; ``python -m probes`` uses it too (:mod:`probes.cli`).

Errors the user can fix (missing file, invalid UTF-8, empty input, unknown model or corpus) exit with status 2 and
one line on stderr; ``--debug`` shows the traceback of unexpected failures.
"""

from __future__ import annotations

import argparse

from asc.cli import attribute, attribute_corpus, branch, causal, compare, explain, intervene, models
from asc.cli import eval as evaluate
from asc.cli.args import Parser, subcommands
from asc.cli.runner import main_of

__all__ = ["build_parser", "main"]

_COMMANDS = (models, explain, evaluate, compare, causal, branch, attribute, intervene, attribute_corpus)  # help order


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m asc`` and of each of its subcommands."""
    parser = Parser(prog="python -m asc", description="AsC-Eval: next-token scores per AST node.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of unexpected errors")
    sub = subcommands(parser)
    for command in _COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m asc`` on ``argv`` (default: the process's arguments); the exit status."""
    return main_of(build_parser(), argv)
