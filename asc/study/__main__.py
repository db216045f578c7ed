"""Command line of the user study: ``python -m asc.study check STUDY`` validates a study file;
``python -m asc.study prepare STUDY [--out FILE]`` completes and scores its samples once and writes
the frozen file participants are shown. User mistakes (a malformed file, a model that cannot be
loaded) exit with status 2 and one line on stderr.
"""

from __future__ import annotations

import argparse
import sys

from asc.errors import AscError
from asc.study.definition import load_study
from asc.study.frozen import frozen_path, prepare_study, save_frozen

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m asc.study", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="validate a study file")
    check.add_argument("study")
    prep = sub.add_parser("prepare", help="complete and score the samples once, write the frozen file")
    prep.add_argument("study")
    prep.add_argument("--out", help="frozen file to write (default: <$ASC_STUDY_DIR or runs/study>/<id>.frozen.json)")
    args = parser.parse_args(argv)
    try:
        definition = load_study(args.study)
        if args.command == "prepare":
            out = save_frozen(prepare_study(definition), args.out or frozen_path(definition))
            print(f"prepared {len(definition.samples)} samples of {definition.id!r}: {out}")
        else:
            print(f"{definition.id}: {len(definition.groups)} groups, {len(definition.samples)} samples: ok")
    except AscError as err:  # a malformed file, an unloadable model: one line, exit 2
        print(f"error: {err}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
