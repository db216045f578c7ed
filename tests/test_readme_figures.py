"""The docs' benchmark figures are the ones `make bench` wrote to ``docs/bench/`` (``docs/render_bench.py``).

The pages are README.md and every Markdown page of the documentation site (``docs/**/*.md``, where the README's
sections now live). Each quoted figure carries a marker naming its file and figure (or section); every page must
equal what the render script makes of it from the files, so a figure typed by hand, or a file re-measured without
re-rendering, fails.
So that the check cannot pass by quoting nothing: every benchmark of the Makefile's ``bench`` target has its file
(machine, load, date and commit on top), every file is quoted, and paragraphs that cite a benchmark hold no
time, memory, throughput or speed-up figure without a marker, limits and targets aside.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "docs" / "models.md"  # the GPU report's section


def _render_module():
    spec = importlib.util.spec_from_file_location("render_bench", ROOT / "docs" / "render_bench.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


render_bench = _render_module()
from benchmarks.report import BENCH_DIR, read  # noqa: E402  (render_bench put the root on the path)

PAGES = render_bench.pages(ROOT)

# a figure: a number and a unit of time, memory, throughput or ratio (1.75 s, 0.56 GB, 441 tokens/s, 2.5x)
MEASURE = re.compile(r"(?<![\w.,])(\d[\d,]*(?:\.\d+)?)(?:\s?(?:ms|s|min|minutes|seconds|GB|MB|KB|tokens/s|texts/s)\b|x\b)")
# what a limit or a target looks like just before its number ("<= 5 s", "under 1 GB", "target 30 s")
LIMIT = re.compile(r"(<=?|>=?|under|below|at most|up to|within|limit|target|over|above|aims? at)\W*$", re.I)
CITES = re.compile(r"make bench|benchmarks/|bench_\w+|docs/bench/")
BENCH_PAGES = (ROOT / "docs" / "corpora.md", ROOT / "docs" / "performance.md")  # every paragraph is checked there


def _bench_targets() -> list[str]:
    """The benchmarks the Makefile's ``bench`` and ``bench-table2-plan`` targets run (``benchmarks/bench_NAME.py`` ->
    NAME)."""
    make = (ROOT / "Makefile").read_text()
    names = []
    for name in ("bench", "bench-table2-plan"):
        target = make[make.index(f"\n{name}:"):]
        target = target[: re.search(r"\n\S", target[1:]).start() + 1]
        names += re.findall(r"benchmarks/bench_(\w+)\.py", target)
    return names


def _paragraphs(text: str) -> list[str]:
    """Paragraphs outside fenced blocks (fenced blocks are quoted whole or are not figures)."""
    prose = re.sub(r"^```.*?^```", "", text, flags=re.M | re.S)
    return [p for p in re.split(r"\n\s*\n", prose) if p.strip()]


def _unmarked(paragraph: str) -> list[str]:
    """Measurement-like figures of ``paragraph`` that are neither marked nor limits."""
    out = []
    for m in MEASURE.finditer(paragraph):
        marked = paragraph[m.end(1):].startswith("<!--bench:")
        if not marked and not LIMIT.search(paragraph[max(0, m.start() - 14):m.start()]):
            out.append(m.group(0))
    return out


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def _differences(readme: str, bench_dir: Path = BENCH_DIR, name: str = "README.md") -> str:
    """The lines of ``readme`` (a page's text) whose figures differ from ``bench_dir``'s files, as a diff ('' when
    none)."""
    import difflib

    rendered = render_bench.render(readme, bench_dir)
    return "".join(difflib.unified_diff(readme.splitlines(True), rendered.splitlines(True), name,
                                        "from docs/bench", n=0))


def test_the_pages_are_the_readme_and_the_docs_site():
    names = [_name(p) for p in PAGES]
    assert names[0] == "README.md" and {"docs/performance.md", "docs/corpora.md", "docs/models.md"} <= set(names)


@pytest.mark.parametrize("page", PAGES, ids=_name)
def test_page_equals_its_rendering_from_docs_bench(page):
    diff = _differences(page.read_text(encoding="utf-8"), name=_name(page))
    hint = "run docs/render_bench.py after make bench"
    assert not diff, f"{_name(page)}: figures differ from docs/bench ({hint}):\n{diff}"


def _demo_bench(folder: Path) -> str:
    """A docs/bench folder with one file (figure ``a_s``, section ``table``) and a page quoting it."""
    from benchmarks.report import Report

    report = Report("demo", "a demo", out=folder / "demo.txt")
    report.section("table")
    report.line(f"step {report.figure('a_s', 1.75, '.2f')} s\nstep two")
    report.write()
    return "## Performance\n\ntook 1.75<!--bench:demo/a_s--> s:\n\n<!--bench:demo/table-->\n```text\nstep 1.75 s\nstep two\n```\n"


def test_a_changed_figure_is_caught(tmp_path):
    readme = _demo_bench(tmp_path)
    assert _differences(readme, tmp_path) == ""
    wrong = readme.replace("took 1.75", "took 1.57")  # a figure typed by hand
    assert "-took 1.57" in _differences(wrong, tmp_path) and render_bench.render(wrong, tmp_path) == readme
    edited = readme.replace("step two", "step two, by hand")  # a block's line typed by hand
    assert "+step two\n" in _differences(edited, tmp_path)
    (tmp_path / "demo.txt").write_text((tmp_path / "demo.txt").read_text().replace("1.75", "2.10"))  # re-measured
    assert "+took 2.10" in _differences(readme, tmp_path)
    with pytest.raises(render_bench.FigureError, match="no figure"):
        render_bench.render(readme.replace("demo/a_s", "demo/nosuch_s"), tmp_path)
    with pytest.raises(render_bench.FigureError, match="no docs/bench/other.txt"):
        render_bench.render(readme.replace("demo/table", "other/table"), tmp_path)


@pytest.mark.parametrize("bench", _bench_targets())
def test_every_benchmark_writes_its_file_with_machine_date_and_commit(bench):
    path = BENCH_DIR / f"{bench}.txt"
    assert path.is_file(), f"docs/bench/{bench}.txt is missing: run `make bench` (benchmarks/bench_{bench}.py)"
    got = read(path)
    header = "\n".join(got.header)
    for field in (f"# bench_{bench}: ", "# machine: ", "CPUs", "# load: ", "# date: ", "; commit "):
        assert field in header, f"docs/bench/{bench}.txt: no {field.strip()!r} in its header"
    body = "\n".join(line for lines in got.sections.values() for line in lines)
    for name, value in got.figures.items():  # a figure is a number the benchmark printed
        assert value in body, f"docs/bench/{bench}.txt: figure {name} = {value} is not in its printed lines"


def test_every_file_is_quoted_and_the_pages_quote_enough():
    quoted = set().union(*(render_bench.quoted(p.read_text(encoding="utf-8")) for p in PAGES))
    files = {p.stem for p in BENCH_DIR.glob("*.txt")}
    assert files >= set(_bench_targets())
    assert not files - {f for f, _ in quoted}, f"files no page quotes: {sorted(files - {f for f, _ in quoted})}"
    assert len(quoted) >= 30


def test_paragraphs_citing_a_benchmark_mark_every_figure():
    texts = {page: page.read_text(encoding="utf-8") for page in PAGES}
    assert set(BENCH_PAGES) <= set(texts)
    paragraphs = [(page, p) for page, text in texts.items() for p in _paragraphs(text)
                  if CITES.search(p) or page in BENCH_PAGES]
    bad = [f"{_name(page)}: {figures}: {p.strip()[:160]}..." for page, p in paragraphs if (figures := _unmarked(p))]
    assert not bad, "mark these figures with <!--bench:FILE/NAME--> (or remove them):\n" + "\n".join(bad)


def test_the_scan_finds_unmarked_figures():
    assert _unmarked("`make bench` measured 1.75 s and 0.56 GB, 441 tokens/s, 2.5x faster") == [
        "1.75 s", "0.56 GB", "441 tokens/s", "2.5x"]
    assert _unmarked("took 1.75<!--bench:corpus/compare_100000_s--> s (target <= 5 s, under 1 GB)") == []


def test_a_report_reads_back_as_written(tmp_path, capsys):
    from benchmarks.report import Report

    report = Report("demo", "a demo", out=tmp_path / "demo.txt")
    report.line("before any section")
    report.section("table")
    report.line(f"compare {report.figure('compare_s', 1.754, '7.2f')} s\nsecond line")
    path = report.write()
    got = read(path)
    assert got.header[0] == "# bench_demo: a demo" and got.header[2].startswith("# load: ")
    assert got.sections == {"main": ["before any section"], "table": ["compare    1.75 s", "second line"]}
    assert got.figures == {"compare_s": "1.75"}
    assert "compare    1.75 s" in capsys.readouterr().out
    with pytest.raises(ValueError):
        report.section("figures")
    with pytest.raises(ValueError):
        report.figure("compare_s", 2)


def test_blocks_are_filled_in_place_even_when_empty(tmp_path):
    from benchmarks.report import Report

    report = Report("demo", "a demo", out=tmp_path / "demo.txt")
    report.section("one")
    report.line(f"first {report.figure('a_s', 1.5, '.1f')} s")
    report.section("two")
    report.line("second")
    report.write()
    readme = ("<!--bench:demo/one-->\n```text\n```\n\nprose between, took 0<!--bench:demo/a_s--> s\n\n"
              "<!--bench:demo/two-->\n```text\nold line\n```\n")
    assert render_bench.render(readme, tmp_path) == (
        "<!--bench:demo/one-->\n```text\nfirst 1.5 s\n```\n\nprose between, took 1.5<!--bench:demo/a_s--> s\n\n"
        "<!--bench:demo/two-->\n```text\nsecond\n```\n")


GPU_NUMBER = re.compile(r"(?<![\w.-])\d[\d,]*(?:\.\d+)?(?:e[-+]\d+)?(?=x\b|[\s;,)]|$)")


def _gpu_table(readme: str) -> list[str]:
    """The measured column of the GPU table of docs/models.md (the rows after '**Measured**' in '## GPU report')."""
    section = readme[readme.index("\n## GPU report"):]
    rows = section[section.index("**Measured**"):].split("\n\n")[1].splitlines()[2:]
    return [row.split(" | ")[1] for row in rows]


def _gpu_missing(readme: str, report: str) -> list[str]:
    """The numbers of the GPU table of docs/models.md that docs/gpu-report.md does not print."""
    numbers = [n for cell in _gpu_table(readme) for n in GPU_NUMBER.findall(cell)]
    assert len(numbers) >= 20, numbers
    return [n for n in numbers if not re.search(rf"(?<![\d.,]){re.escape(n)}(?![\d])", report)]


def test_the_gpu_table_quotes_the_committed_gpu_report():
    """The GPU report is made on a lent machine, not by `make bench`: each number of the GPU table of docs/models.md
    must be one the committed docs/gpu-report.md prints, and the page names the report's commit and date."""
    report = (ROOT / "docs" / "gpu-report.md").read_text(encoding="utf-8")
    readme = MODELS.read_text(encoding="utf-8")
    assert len(_gpu_table(readme)) >= 8
    assert not _gpu_missing(readme, report), "docs/models.md: GPU figures not in docs/gpu-report.md"
    commit = re.search(r"^- commit: (\w+)", report, re.M)
    date = re.search(r"^- date: (\S+ \S+)", report, re.M)
    assert commit and date and commit[1] in readme and date[1] in readme


def test_the_gpu_check_catches_a_number_typed_by_hand():
    report = (ROOT / "docs" / "gpu-report.md").read_text(encoding="utf-8")
    readme = MODELS.read_text(encoding="utf-8")
    first = _gpu_table(readme)[0]
    quoted = GPU_NUMBER.findall(first)[0]  # the first figure the table quotes, one more in its last digit
    typed = quoted[:-1] + str((int(quoted[-1]) + 1) % 10)
    changed = readme.replace(first, first.replace(quoted, typed, 1), 1)
    assert changed != readme
    assert typed in _gpu_missing(changed, report)
