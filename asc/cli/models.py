"""``python -m asc models``: the embedded models, whether each is installed, and what else ``--model`` takes.

The smallest command: no argument of its own and no model loaded; the list is :data:`asc.models.EMBEDDED`, with the
default model marked and the folder where de-quantized GGUF weights are cached.
"""

from __future__ import annotations

import argparse

from asc.cli.args import Subcommands

__all__ = ["add_parser", "execute"]


def add_parser(sub: Subcommands) -> argparse.ArgumentParser:
    """Add ``models`` to ``python -m asc``'s subcommands."""
    p = sub.add_parser("models", help="list embedded models and whether each is installed")
    p.set_defaults(func=execute)
    return p


def execute(args: argparse.Namespace) -> int:
    """Print the table of embedded models (name, kind, installed, description)."""
    from asc.models import DEFAULT_MODEL, EMBEDDED
    from asc.paths import cache_dir

    print(f"{'name':<14} {'kind':<8} {'installed':<10} description")
    for name, entry in EMBEDDED.items():
        flag = "yes" if entry.installed() else "no"
        star = " (default)" if name == DEFAULT_MODEL else ""
        print(f"{name:<14} {entry.kind:<8} {flag:<10} {entry.description}{star}")
    print(f"\nAlso accepted: a local Hugging Face folder, a .gguf file, or a hub id 'org/name'.\n"
          f"De-quantized GGUF weights are cached in {cache_dir()}")
    return 0
