"""Put the figures of ``docs/bench/*.txt`` (what `make bench` writes) into the pages that quote them (README.md and
the documentation site's ``docs/**/*.md``), or check that they are there.

    .venv/bin/python docs/render_bench.py           # rewrite every page's quoted figures from the files
    .venv/bin/python docs/render_bench.py --check   # exit 1 and print the differences when they disagree
    .venv/bin/python docs/render_bench.py docs/corpora.md   # one page only

A page marks every figure it quotes from a benchmark, in two ways (invisible once rendered):

* a number followed at once by ``<!--bench:FILE/NAME-->``, e.g. ``1.75<!--bench:corpus/compare_100000_s--> s``:
  the number is figure NAME of ``docs/bench/FILE.txt`` (its ``[figures]`` block, :mod:`benchmarks.report`);
* a line ``<!--bench:FILE/SECTION-->`` right above a fenced block: the block holds section SECTION of that file,
  line for line.

:func:`render` returns a page with every marked number and block taken from the files; an unknown file,
figure or section is an error naming it. ``tests/test_readme_figures.py`` fails when :func:`render` would change
a page (:func:`pages`), so a figure edited by hand, or a file re-measured without re-rendering, is caught.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.report import BENCH_DIR, BenchFile, read  # noqa: E402  (after the path)

NUMBER = r"(?<![\d.,])\d[\d,]*(?:\.\d+)?"  # unsigned: a dash before it is text ("1.01-1.07")
INLINE = re.compile(rf"(?P<number>{NUMBER})(?P<marker><!--bench:(?P<file>[\w-]+)/(?P<name>[a-z][a-z0-9_.]*)-->)")
# the block's body: whole lines, none of them a fence (an empty block must not run on to the next one's end)
BLOCK = re.compile(r"^(?P<marker><!--bench:(?P<file>[\w-]+)/(?P<name>[a-z][a-z0-9_.]*)-->)\n"
                   r"(?P<fence>```\w*)\n(?P<body>(?:(?!```)[^\n]*\n)*)```$", re.M)
MARKER = re.compile(r"<!--bench:([\w-]+)/([a-z][a-z0-9_.]*)-->")


class FigureError(ValueError):
    """A page's marker that names no file, figure or section."""


def _files(bench_dir: Path) -> dict[str, BenchFile]:
    return {p.stem: read(p) for p in sorted(bench_dir.glob("*.txt"))}


def _lookup(files: dict[str, BenchFile], file: str, name: str, kind: str) -> str:
    if file not in files:
        raise FigureError(f"<!--bench:{file}/{name}-->: no docs/bench/{file}.txt (run `make bench`)")
    if kind == "figure":
        if name not in files[file].figures:
            raise FigureError(f"<!--bench:{file}/{name}-->: docs/bench/{file}.txt has no figure {name!r}")
        return files[file].figures[name]
    if name not in files[file].sections:
        raise FigureError(f"<!--bench:{file}/{name}-->: docs/bench/{file}.txt has no section [{name}]")
    return "\n".join(files[file].sections[name])


# Markdown files of docs/ that are measurements themselves, not pages quoting them: the GPU machine's reports
# (benchmarks/gpu/; tests/test_readme_figures.py checks the models page's GPU figures against gpu-report.md) and
# tables a benchmark writes as Markdown into docs/bench/
REPORTS = ("gpu-report.md", "table2-gpu/*.md", "bench/*.md")


def pages(root: Path = ROOT) -> list[Path]:
    """The pages that may quote figures: README.md and every Markdown page of the documentation site (``docs/``)
    but the GPU machine's reports (:data:`REPORTS`)."""
    docs = root / "docs"
    reports = {path for pattern in REPORTS for path in docs.glob(pattern)}
    return [root / "README.md", *sorted(p for p in docs.rglob("*.md") if p not in reports)]


def render(readme: str, bench_dir: Path = BENCH_DIR) -> str:
    """``readme`` (a page's text) with every marked figure and block replaced by the files' (see the module
    docstring)."""
    files = _files(bench_dir)
    out = BLOCK.sub(lambda m: f"{m['marker']}\n{m['fence']}\n{_lookup(files, m['file'], m['name'], 'section')}\n```",
                    readme)
    out = INLINE.sub(lambda m: _lookup(files, m["file"], m["name"], "figure") + m["marker"], out)
    placed = {m.start("marker") for pattern in (BLOCK, INLINE) for m in pattern.finditer(out)}
    stray = [m.group(0) for m in MARKER.finditer(out) if m.start() not in placed]
    if stray:
        raise FigureError(f"markers neither right after a number nor right above a fenced block: {stray}")
    return out


def quoted(readme: str) -> set[tuple[str, str]]:
    """The (file, name) pairs a page quotes."""
    return {(m[1], m[2]) for m in MARKER.finditer(readme)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="change nothing; exit 1 when a page disagrees")
    ap.add_argument("pages", nargs="*", type=Path, help="the pages (default: README.md and docs/**/*.md)")
    args = ap.parse_args()
    differ = False
    for path in args.pages or pages():
        old = path.read_text(encoding="utf-8")
        try:
            new = render(old)
        except FigureError as err:
            raise SystemExit(f"error: {path}: {err}") from None
        name = path.resolve().relative_to(ROOT) if path.resolve().is_relative_to(ROOT) else path
        if new == old:
            if quoted(old):
                print(f"{name}: every quoted figure equals its file's ({len(quoted(old))} quoted)")
            continue
        if args.check:
            sys.stdout.writelines(difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(name),
                                                       "from docs/bench"))
            differ = True
            continue
        path.write_text(new, encoding="utf-8")
        print(f"{name}: figures rewritten from docs/bench/")
    if differ:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
