"""``python -m asc``: the entry point of the command line, which is :mod:`asc.cli` (its parser and commands)."""

from __future__ import annotations

import sys

from asc.cli import main

if __name__ == "__main__":
    sys.exit(main())
