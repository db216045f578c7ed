"""What every `make bench` benchmark writes: ``docs/bench/<bench>.txt``, its figures with where they were measured.

A benchmark makes one :class:`Report`, prints through it and records the figures the pages quote (docs/*.md)::

    report = Report("pipeline", "what AsC-Eval costs on top of the model's forward passes")
    report.section("overhead")            # a named block of printed lines (a page can quote it whole)
    report.line(f"bare forward passes : {b:7.2f} s")
    report.figure("bare_s", b, ".2f")     # a named figure, formatted as the pages print it
    report.write()                        # docs/bench/pipeline.txt

The file::

    # bench_pipeline: what AsC-Eval costs on top of the model's forward passes
    # machine: Linux-..., x86_64, 2 CPUs; python 3.11.7
    # load: other processes used 1.62 of 2 CPUs on average during the run (shared with other work)
    # date: 2026-11-25T21:00:00+00:00; commit abc1234

    [overhead]
    bare forward passes :   11.08 s

    [figures]
    bare_s = 11.08

``[section]`` lines start the named blocks (the lines before the first are section ``main``); ``[figures]`` holds ``name = value`` lines, the values exactly as the
pages show them. :func:`read` parses a file back (``docs/render_bench.py`` and ``tests/test_readme_figures.py``
do). The load line compares the whole machine's busy CPU time with this process's and its finished children's
over the run: what other work took (processes the benchmark started but did not wait for, such as Ray's
workers, count as other work).
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "docs" / "bench"
FIGURES = "figures"
MAIN = "main"  # the name :func:`read` gives the lines printed before the first section
_NAME = re.compile(r"^[a-z][a-z0-9_.]*$")
_IDLE_CPUS = 0.25  # other processes' average use below which the machine counts as idle


def _busy_seconds() -> float | None:
    """The whole machine's busy CPU seconds so far (None without psutil)."""
    try:
        import psutil
    except ImportError:
        return None
    t = psutil.cpu_times()
    return float(sum(t)) - t.idle - getattr(t, "iowait", 0.0)


def _own_seconds() -> float:
    """CPU seconds of this process and of its children that have finished."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def commit() -> str:
    """The checkout's short commit, marked when tracked files other than the figures (``docs/bench/``, and README.md
    and docs/*.md, which `make bench` itself rewrites) differ from it."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no", "--", ".", ":!docs/bench",
                                ":!README.md", ":!docs/*.md"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
        return (rev.stdout.strip() or "unknown") + (" (with uncommitted changes)" if dirty else "")
    except OSError:
        return "unknown"


@dataclass
class Report:
    """The printed lines and named figures of one benchmark run (see the module docstring)."""

    bench: str
    title: str
    out: Path | None = None
    sections: dict[str, list[str]] = field(default_factory=lambda: {"": []})
    figures: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self._current = ""
        self._start = (time.perf_counter(), _busy_seconds(), _own_seconds())

    def section(self, name: str) -> None:
        """Start the block ``[name]``: the lines printed from here on."""
        if not _NAME.match(name) or name in (FIGURES, MAIN) or name in self.sections:
            raise ValueError(f"section {name!r}: a new lower-case name other than {FIGURES!r} and {MAIN!r}")
        self.sections[name] = []
        self._current = name

    def line(self, text: str = "") -> None:
        """Print ``text`` (one or more lines) and keep it in the current section."""
        print(text, flush=True)
        self.sections[self._current].extend(text.split("\n"))

    def figure(self, name: str, value: float | int | str, spec: str = "") -> str:
        """Record ``value`` as figure ``name``, formatted with ``spec`` (``format(value, spec)``, kept without the
        padding a width adds); returns the formatted text, padding included, for the printed line."""
        if not _NAME.match(name) or name in self.figures:
            raise ValueError(f"figure {name!r}: a new name of lower-case letters, digits, '_' and '.'")
        text = format(value, spec)
        self.figures[name] = text.strip()
        return text

    def header(self) -> list[str]:
        wall = time.perf_counter() - self._start[0]
        busy, cpus = _busy_seconds(), os.cpu_count() or 1
        if busy is None or self._start[1] is None:
            load = f"# load: unknown (no psutil); load average {os.getloadavg()[0]:.2f} at the end"
        else:
            others = max(0.0, (busy - self._start[1]) - (_own_seconds() - self._start[2])) / max(wall, 1e-9)
            state = "idle" if others < _IDLE_CPUS else "shared with other work"
            load = f"# load: other processes used {others:.2f} of {cpus} CPUs on average during the run ({state})"
        return [f"# bench_{self.bench}: {self.title}",
                f"# machine: {platform.platform()}, {platform.processor() or platform.machine()}, {cpus} CPUs; "
                f"python {platform.python_version()}",
                load,
                f"# date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}; commit {commit()}; "
                f"{wall:.0f} s"]

    def text(self) -> str:
        lines = self.header()
        for name, body in self.sections.items():
            if name or any(body):
                lines += ["", *([f"[{name}]"] if name else []), *body]
        if self.figures:
            lines += ["", f"[{FIGURES}]", *(f"{k} = {v}" for k, v in self.figures.items())]
        return "\n".join(lines) + "\n"

    def write(self) -> Path:
        """Write the file (``out``, default ``docs/bench/<bench>.txt``) and say where."""
        path = self.out or BENCH_DIR / f"{self.bench}.txt"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(self.text(), encoding="utf-8")
        print(f"\nwritten to {path}", flush=True)
        return path


@dataclass(frozen=True)
class BenchFile:
    """A parsed ``docs/bench/<bench>.txt``: its header lines, sections (name -> lines; :data:`MAIN`: the lines
    before the first section) and figures."""

    header: tuple[str, ...]
    sections: dict[str, list[str]]
    figures: dict[str, str]


def read(path: str | Path) -> BenchFile:
    """Parse a file :class:`Report` wrote."""
    header: list[str] = []
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for raw in Path(path).read_text(encoding="utf-8").splitlines():
        if raw.startswith("# ") and current == "" and not sections[""]:
            header.append(raw)
        elif re.fullmatch(r"\[[a-z][a-z0-9_.]*\]", raw):
            current = raw[1:-1]
            sections[current] = []
        else:
            sections[current].append(raw)
    for body in sections.values():  # the blank line before each section belongs to none
        while body and not body[-1].strip():
            body.pop()
        while body and not body[0].strip():
            body.pop(0)
    figures = dict(line.split(" = ", 1) for line in sections.pop(FIGURES, []) if " = " in line)
    sections[MAIN] = sections.pop("")
    return BenchFile(tuple(header), sections, figures)


def quiet_torch(threads: int | None) -> None:
    """What every model benchmark sets first: ``threads`` torch threads (None: torch's own), and transformers'
    logging and progress bars off (they would land in the printed figures)."""
    import torch
    from transformers.utils import logging as hf_logging

    if threads:
        torch.set_num_threads(threads)
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()


def longest_algorithm() -> str:
    """The benchmarks' long function: the longest one of 40-60 lines in the ``algorithms`` corpus."""
    from asc.corpus.sources import load_corpus

    functions = load_corpus("algorithms", min_lines=40, max_lines=60)
    return max(functions, key=lambda s: len(s.source.splitlines())).source
