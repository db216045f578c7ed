"""What the packaging tests share: pyproject's dependency groups, the packages each group brings, a fresh venv with the
wheel, offline.

The wheel is built by ``python -m build --no-isolation`` (the sdist, then the wheel from it) from a copy of the clone's
files that git tracks or would add (:func:`clone_copy`): what a fresh clone holds, with the work not yet committed.

A fresh venv gets the wheel with ``pip install --no-deps`` and sees the packages of the groups asked for, and only
those, through a ``.pth`` line naming a folder of links (:func:`dependency_view`): the distributions that
``pip install asc-studio[groups]`` would install (:func:`closure`: the requirements of pyproject.toml and, from their
metadata, of every package they need, with markers and extras honoured), linked from this ``.venv``. Nothing is
downloaded; a package the project imports but does not declare is missing there, as after a real ``pip install``.
The project itself is not installed in ``.venv`` (the tests import it from the clone), so the venv's ``asc`` is the
wheel's.
"""

from __future__ import annotations

import importlib.metadata as md
import os
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from collections.abc import Iterable
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers import ROOT

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
OURS = canonicalize_name(PROJECT["name"])
SITE = Path(sysconfig.get_paths()["purelib"])  # this .venv's site-packages
OUR_PACKAGES = ("asc", "probes", "ui", "asc_app")


def requirements(groups: Iterable[str] = ()) -> list[Requirement]:
    """The core requirements of pyproject.toml and those of the optional ``groups``."""
    reqs = [Requirement(r) for r in PROJECT["dependencies"]]
    for group in groups:
        reqs += [Requirement(r) for r in PROJECT["optional-dependencies"][group]]
    return reqs


def closure(groups: Iterable[str] = ()) -> dict[str, md.Distribution]:
    """The installed distributions (by normalized name) that ``pip install asc-studio[groups]`` brings, from the
    metadata in this ``.venv``; AssertionError naming one that it lacks."""
    found: dict[str, md.Distribution] = {}
    done: set[tuple[str, frozenset[str]]] = set()
    todo = [(r, PROJECT["name"]) for r in requirements(groups)]
    while todo:
        req, needed_by = todo.pop()
        name, extras = canonicalize_name(req.name), frozenset(req.extras)
        if (name, extras) in done or (req.marker is not None and not req.marker.evaluate({"extra": ""})):
            continue
        done.add((name, extras))
        if name == OURS:  # a group that names others: asc-studio[causal,probes]
            todo += [(r, name) for r in requirements(extras)[len(PROJECT["dependencies"]):]]
            continue
        dist = found.get(name) or next(iter(md.distributions(name=name, path=[str(SITE)])), None)
        assert dist is not None, f"{name} (needed by {needed_by}) is not installed in {SITE}: make setup"
        found[name] = dist
        for text in dist.requires or []:
            sub = Requirement(text)
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in ("", *extras)):
                todo.append((Requirement(str(sub).split(";")[0]), name))
    return found


def _parts(dist: md.Distribution) -> list[tuple[str, ...]]:
    """The paths of ``dist``'s files inside site-packages (its RECORD), as tuples; scripts and byte code left out."""
    assert dist.files is not None, f"{dist.metadata['Name']} has no RECORD file"
    parts = [tuple(Path(str(f)).parts) for f in dist.files]
    return [p for p in parts if p and p[0] != ".." and "__pycache__" not in p]


def dependency_view(dists: Iterable[md.Distribution], folder: Path) -> Path:
    """``folder`` filled with links to the files of ``dists`` in this ``.venv`` (packages, modules, libraries and
    their ``.dist-info``), and to nothing else: a folder shared with a distribution not in ``dists`` (a namespace
    package such as ``google``) is made here and linked file by file below it."""
    wanted = {canonicalize_name(d.metadata["Name"]) for d in dists}
    owners: dict[tuple[str, ...], set[str]] = {}  # every prefix of every installed file -> its distributions
    for dist in md.distributions(path=[str(SITE)]):
        name = canonicalize_name(dist.metadata["Name"])
        for parts in _parts(dist) if dist.files is not None else []:
            for depth in range(1, len(parts) + 1):
                owners.setdefault(parts[:depth], set()).add(name)
    assert not any((p,) in owners for p in OUR_PACKAGES), f"the project is installed in {SITE}: uninstall it"
    folder.mkdir(parents=True)
    for dist in dists:
        for parts in _parts(dist):
            depth = 1
            while depth < len(parts) and not owners[parts[:depth]] <= wanted:
                depth += 1
            link = folder.joinpath(*parts[:depth])
            if not link.is_symlink():
                link.parent.mkdir(parents=True, exist_ok=True)
                link.symlink_to(SITE.joinpath(*parts[:depth]))
    return folder


def clone_copy(folder: Path) -> Path:
    """The clone's files as git lists them (tracked, and new ones it does not ignore) copied into ``folder``."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, check=True).stdout.decode().split("\0")
    for name in filter(None, listed):
        if (ROOT / name).is_file():  # a deleted file not yet committed is still listed
            (folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, folder / name)
    return folder


def clean_env(**values: str) -> dict[str, str]:
    """This environment without the clone on ``PYTHONPATH`` and without ``ASC_*`` (tests/conftest.py sets both), plus
    ``values``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ASC_", "PYTHON"))}
    return {**env, "HF_HUB_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", **values}


def build_wheel(tmp: Path) -> Path:
    """The wheel ``python -m build`` makes from a copy of the clone (sdist first, the wheel from the sdist)."""
    source = clone_copy(tmp / "clone")
    tools = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and Path(p).resolve() != ROOT]
    out = subprocess.run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(tmp / "dist"), str(source)],
                         capture_output=True, text=True, env=clean_env(PYTHONPATH=os.pathsep.join(tools)), timeout=600)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (wheel,) = (tmp / "dist").glob("*.whl")
    return wheel


def fresh_venv(folder: Path, wheel: Path, groups: Iterable[str] = ()) -> Path:
    """A new venv in ``folder`` with ``wheel`` installed (``--no-deps``) and the packages of ``groups`` (and the core)
    visible, nothing else; returns its ``bin`` folder."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True, timeout=300)
    python = folder / "bin" / "python"
    site = Path(subprocess.run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                               capture_output=True, text=True, check=True, env=clean_env()).stdout.strip())
    # a folder named site-packages: Streamlit takes one installed elsewhere for its own development checkout
    view = dependency_view(closure(groups).values(), folder / "dependencies" / "site-packages")
    (site / "asc_dependencies.pth").write_text(f"{view}\n")
    out = subprocess.run([sys.executable, "-m", "pip", "--python", str(python), "install", "--quiet", "--no-deps",
                          "--no-index", str(wheel)], capture_output=True, text=True, env=clean_env(), timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    return folder / "bin"


def tiny_model_module(folder: Path) -> dict[str, str]:
    """The tests' ``tiny-random`` model (tests/support/models.py) as the module ``asc_tiny_model`` in ``folder``; the
    variables that make an installed ``asc`` register it."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "tests" / "support" / "models.py", folder / "asc_tiny_model.py")
    return {"PYTHONPATH": str(folder), "ASC_MODEL_MODULES": "asc_tiny_model"}


def optional_modules() -> set[str]:
    """The import names that only the optional groups bring (every group's packages less the core's)."""
    optional = set(closure(PROJECT["optional-dependencies"])) - set(closure())
    return {module for module, names in md.packages_distributions().items()
            if names and all(canonicalize_name(n) in optional for n in names)}
