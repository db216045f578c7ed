"""``python -m probes``: the entry point of the probes' command line, which is :mod:`probes.cli`."""

from __future__ import annotations

import sys

from probes.cli import main

if __name__ == "__main__":
    sys.exit(main())
