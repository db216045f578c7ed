"""The documentation site (``mkdocs.yml``, ``docs/``), checked cheaply: README.md is a front page of at most 300
lines, every page of the nav exists and every Markdown page of ``docs/`` is in the nav, every relative link and image
of README.md and the pages points at a file that exists, and every public facade (a package with an ``__all__``) has
an API page. The strict build itself (``make docs``, a prerequisite of ``make test``) checks anchors, renders the
API reference and fails on a name of a curated ``__all__`` it did not document (``docs/hooks.py``)."""

from __future__ import annotations

import importlib.util
import re
import zlib
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README = ROOT / "README.md"
MAX_README_LINES = 300
# a Markdown link or image: [text](target) or ![alt](target), the target up to a space or the closing parenthesis
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^ *```.*?^ *```", re.M | re.S)
CODE = re.compile(r"`[^`\n]*`")


def _config() -> dict:
    # mkdocs.yml uses no custom YAML tags, so the safe loader reads it
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text(encoding="utf-8"))


def _nav_files(nav: list) -> list[str]:
    """The files the nav names, in order (a section's entries, a titled or untitled page)."""
    out: list[str] = []
    for entry in nav:
        if isinstance(entry, str):
            out.append(entry)
        elif isinstance(entry, dict):
            for value in entry.values():
                out += _nav_files(value) if isinstance(value, list) else [value]
    return out


def _pages() -> list[Path]:
    return [README, *sorted(DOCS.rglob("*.md"))]


def _links(text: str) -> list[str]:
    """Relative link targets of a Markdown text, outside fenced blocks and inline code."""
    prose = CODE.sub("", FENCE.sub("", text))
    return [t for t in LINK.findall(prose) if not re.match(r"^[a-z][a-z0-9+.-]*:", t) and not t.startswith("#")]


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_a_front_page():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) <= MAX_README_LINES, f"README.md has {len(lines)} lines: move text to a page of docs/"
    text = "\n".join(lines)
    for needed in ("make app", "make test", "docs/folders.md", "docs/api/index.md", "!["):
        assert needed in text, f"README.md no longer has {needed!r}"


def test_every_nav_page_exists_and_every_page_is_in_the_nav():
    config = _config()
    assert config["docs_dir"] == "docs" and config["strict"] is True
    nav = _nav_files(config["nav"])
    assert len(nav) == len(set(nav)), "a page is in the nav twice"
    missing = [f for f in nav if not (DOCS / f).is_file()]
    assert not missing, f"mkdocs.yml's nav names pages that do not exist: {missing}"
    assert config["not_in_nav"].split() == ["/bench/*.md"]  # tables a benchmark writes: built, linked, not in the nav
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if p.parent != DOCS / "bench"}
    assert not pages - set(nav), f"pages of docs/ missing from mkdocs.yml's nav: {sorted(pages - set(nav))}"
    notebooks = {str(p.relative_to(DOCS)) for p in (DOCS / "notebooks").glob("*.ipynb")}
    assert notebooks <= set(nav), f"notebooks missing from the nav: {sorted(notebooks - set(nav))}"


def test_the_build_is_offline_and_does_not_execute_notebooks():
    config = _config()
    assert config["theme"]["font"] is False  # no Google Fonts
    plugins = {next(iter(p)) if isinstance(p, dict) else p: p for p in config["plugins"]}
    assert not {"privacy", "social", "material/privacy", "material/social"} & set(plugins)
    jupyter = plugins["mkdocs-jupyter"]["mkdocs-jupyter"]
    assert jupyter["execute"] is False and jupyter["include"] == ["*.ipynb"]
    make = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^test: .*\bdocs\b", make, re.M), "make test must run make docs"
    assert "mkdocs build --strict" in make


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_at_files_that_exist(page):
    broken = []
    for target in _links(page.read_text(encoding="utf-8")):
        path = target.split("#", 1)[0]
        if path and not (page.parent / path).exists():
            broken.append(target)
    assert not broken, f"{page.relative_to(ROOT)} links to files that do not exist: {broken}"


def test_the_link_scan_finds_links_and_skips_code():
    text = "see [a](a.md#x), ![b](img/b.png \"t\"), [c](https://x.org), [d](#here), `[e](e.md)`\n```\n[f](f.md)\n```\n"
    assert _links(text) == ["a.md#x", "img/b.png"]


def test_every_facade_has_an_api_page_in_the_nav():
    hooks = _hooks()
    facades = hooks.facades()
    assert {"asc", "asc.corpus", "asc.branching", "asc.viz", "probes"} <= set(facades)
    documented = hooks.documented_modules()
    assert not set(facades) - set(documented), f"facades without an API page: {sorted(set(facades) - set(documented))}"
    nav = _nav_files(_config()["nav"])
    api = {str(p.relative_to(DOCS)) for p in (DOCS / "api").glob("*.md")}
    assert api <= set(nav), f"API pages missing from the nav: {sorted(api - set(nav))}"


def test_the_hook_finds_undocumented_names(tmp_path):
    """The build's check on its inventory: a name of ``asc.__all__`` missing from it is reported; a name its own
    submodule shadows (``asc.align``) counts as documented where it is defined."""
    hooks = _hooks()
    names = hooks.declared_all("asc")
    assert names and "load_model" in names and "align" in names
    lines = [f"asc.{n} py:function 1 api/asc/#asc.{n} -" for n in names if n not in ("load_model", "align")]
    lines.append("asc.align.align py:function 1 api/asc/#asc.align.align -")
    inventory = tmp_path / "objects.inv"
    header = b"# Sphinx inventory version 2\n# Project: x\n# Version: 0\n# The remainder is zlib-compressed.\n"
    inventory.write_bytes(header + zlib.compress("\n".join(lines).encode()))
    assert hooks.undocumented(["asc"], hooks.inventory_names(inventory)) == ["asc.load_model"]
