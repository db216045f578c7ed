"""The command line ``python -m probes {inspect,attention,gluecode,blanca,sae}``: what a model's layers and heads encode.

One module per subcommand holds its parser and its body (``add_parser(sub)`` and ``execute(args)``): ``inspect``
(INSPECT's layer probes; its old name ``layers`` still works, and a successful run says the new one once), ``attention`` (CodeSyntax
attention heads), ``gluecode`` (glueCode tasks), ``blanca`` (BLANCA: embeddings of text about code) and ``sae``
(sparse autoencoders read through the AST: ``train``, ``eval``, ``enrich``, ``show``).
:func:`build_parser` gathers them, each with ``-v``/``--debug``; the parsing they share with ``python -m asc``
(argument types, model options) is :mod:`asc.cli.args`, and :func:`main` runs them with
:func:`asc.cli.runner.run`.

Errors the user can fix (unknown model, task or corpus, malformed task file) exit with status 2 and one line on
stderr; ``--debug`` shows the traceback of unexpected failures.
"""

from __future__ import annotations

import argparse

from asc.cli.args import Parser, subcommands
from asc.cli.runner import main_of
from probes.cli import attention, blanca, gluecode, inspect, sae

__all__ = ["build_parser", "main"]

_COMMANDS = (inspect, attention, gluecode, blanca, sae)  # help order


def build_parser() -> argparse.ArgumentParser:
    """The parser of ``python -m probes`` and of each of its subcommands."""
    parser = Parser(prog="python -m probes", description="Probes: what a model's layers and attention heads encode "
                    "about code (INSPECT, CodeSyntax, glueCode, BLANCA).")
    sub = subcommands(parser)
    for command in _COMMANDS:
        q = command.add_parser(sub)
        q.add_argument("-v", "--verbose", action="store_true", help="log progress details")
        q.add_argument("--debug", action="store_true", help="show tracebacks of unexpected errors")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run ``python -m probes`` on ``argv`` (default: the process's arguments); the exit status."""
    return main_of(build_parser(), argv)
