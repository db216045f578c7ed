"""MkDocs hooks of the documentation site (``mkdocs.yml``: ``hooks``); ``make docs`` runs them in its strict build.

* Every curated ``__all__`` is documented: each package of ``asc/`` and ``probes/`` whose ``__init__.py`` has an
  ``__all__`` (a facade) has a ``::: package`` directive on a page of ``docs/api/``, and every name of the
  ``__all__`` of each module those pages document is in the built site's inventory (``objects.inv``, written by
  mkdocstrings), so a name added to a facade without a docstring page, or one the handler could not render, fails
  the build with the names.
* Docstrings here use Sphinx roles (``:func:`explain```); Markdown shows the role's text before the code, so the API
  pages drop it (``:func:`` and its kin) and keep the code.

``__all__`` is read from the source with :mod:`ast`, as the python handler reads it (nothing is imported).
"""

from __future__ import annotations

import ast
import re
import zlib
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parent.parent
API = ROOT / "docs" / "api"
PACKAGES = ("asc", "probes")
# packages with an __all__ that are not a library's API: the command lines (python -m asc, python -m probes) have their
# own page (docs/cli.md)
NOT_API = {"asc.cli", "probes.cli"}
DIRECTIVE = re.compile(r"^::: ([\w.]+)\s*$", re.M)
ROLE = re.compile(r":(?:py:)?(?:func|class|mod|meth|attr|data|exc|obj|const):(?=<code>)")


def declared_all(module: str) -> list[str] | None:
    """The names of ``module``'s ``__all__`` as its source assigns them (None: no ``__all__``, or no such module)."""
    base = ROOT.joinpath(*module.split("."))
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    if not path.is_file():
        return None
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets) and node.value is not None:
            return [str(v) for v in ast.literal_eval(node.value)]
    return None


def facades() -> list[str]:
    """The packages of ``asc/`` and ``probes/`` whose ``__init__.py`` declares an ``__all__``."""
    out = []
    for top in PACKAGES:
        for init in sorted((ROOT / top).rglob("__init__.py")):
            name = ".".join(init.parent.relative_to(ROOT).parts)
            if name not in NOT_API and declared_all(name) is not None:
                out.append(name)
    return out


def documented_modules() -> list[str]:
    """The modules the API pages render (their ``::: module`` directives), in page order."""
    return [m for page in sorted(API.glob("*.md")) for m in DIRECTIVE.findall(page.read_text(encoding="utf-8"))]


def inventory_names(path: Path) -> set[str]:
    """The object names of a Sphinx inventory (version 2: four header lines, then zlib-compressed lines)."""
    data = path.read_bytes()
    header_end = 0
    for _ in range(4):
        header_end = data.index(b"\n", header_end) + 1
    lines = zlib.decompress(data[header_end:]).decode("utf-8").splitlines()
    return {line.split(" ", 1)[0] for line in lines if line.strip()}


def _is_module(path: str) -> bool:
    base = ROOT.joinpath(*path.split("."))
    return (base / "__init__.py").is_file() or base.with_suffix(".py").is_file()


def undocumented(modules: list[str], names: set[str]) -> list[str]:
    """``module.name`` for every name of the documented modules' ``__all__`` that the inventory lacks. A name that
    its own submodule shadows (``asc.align``: the function ``align`` of the module ``asc.align``) cannot be rendered
    under the package (griffe keeps the submodule), so there its definition, ``module.name.name``, counts."""
    def documented(m: str, n: str) -> bool:
        return f"{m}.{n}" in names or (_is_module(f"{m}.{n}") and f"{m}.{n}.{n}" in names)
    return [f"{m}.{n}" for m in modules for n in declared_all(m) or [] if not documented(m, n)]


def on_page_content(html: str, page: Any, **kwargs: Any) -> str:
    if page.file.src_uri.startswith("api/"):
        return ROLE.sub("", html)
    return html


def on_post_build(config: Any, **kwargs: Any) -> None:
    modules = documented_modules()
    pageless = [f for f in facades() if f not in modules]
    if pageless:
        raise PluginError("packages with an __all__ and no API page (add `::: NAME` to a page of docs/api/ and "
                          f"list it in mkdocs.yml's nav): {', '.join(pageless)}")
    inventory = Path(config["site_dir"]) / "objects.inv"
    if not inventory.is_file():
        raise PluginError(f"no {inventory}: the mkdocstrings plugin wrote no inventory")
    missing = undocumented(modules, inventory_names(inventory))
    if missing:
        raise PluginError("names of an __all__ the API reference does not document (a docstring page of the "
                          "module, or a name the handler could not resolve; a name its submodule shadows, "
                          "such as asc.align, is documented as `::: asc.align.align`):\n  " + "\n  ".join(missing))
