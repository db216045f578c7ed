"""The wheel ``python -m build`` makes from the clone, installed into fresh venvs (tests/packaging/installs.py: offline,
``--no-deps``, the dependencies of the groups asked for and nothing else visible), run from a folder outside the
clone by its console scripts.

With the core packages only: ``asc explain`` on a snippet (the tests' tiny model, copied out of the clone),
``asc-probes layers --help``, and one line naming the group for ``--engine ray`` and for ``asc-studio``. With the
``app`` group: ``asc-studio`` serves the inspector from the installed files.
"""

from __future__ import annotations

import json
import re
import subprocess
import urllib.request
from pathlib import Path

import pytest

from tests.browser import OUT, chromium, free_port, has_chromium, printed_url, start_app, stop
from tests.helpers import ROOT
from tests.packaging.installs import build_wheel, clean_env, fresh_venv, tiny_model_module

pytestmark = pytest.mark.slow

SRC = "def add(a, b):\n    return a + b\n"
TIMEOUT = 600


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    return build_wheel(tmp_path_factory.mktemp("wheel"))


@pytest.fixture(scope="module")
def core_bin(wheel, tmp_path_factory) -> Path:
    return fresh_venv(tmp_path_factory.mktemp("core") / "venv", wheel)


def _run(command: list, cwd: Path, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run([str(c) for c in command], capture_output=True, text=True, cwd=cwd, env=env, timeout=TIMEOUT)


def test_the_wheel_ships_the_packages_the_app_files_and_py_typed(core_bin, tmp_path):
    code = ("import json, asc, probes, ui, asc.paths as p; print(json.dumps({'files': [m.__file__ for m in (asc, probes, "
            "ui)], 'root': str(p.APP_ROOT), 'installed': p.APP_INSTALLED, 'runs': str(p.runs_dir())}))")
    out = _run([core_bin / "python", "-c", code], tmp_path, clean_env())
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    venv = core_bin.parent.resolve()
    assert all(Path(f).resolve().is_relative_to(venv) for f in doc["files"]), doc  # the wheel's, not the clone's
    root = Path(doc["root"])
    assert doc["installed"] and root.name == "asc_app" and root.resolve().is_relative_to(venv)
    shipped = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    clone = {"app.py", ".streamlit/config.toml", *(p.relative_to(ROOT).as_posix() for top in ("pages", "assets")
                                                    for p in (ROOT / top).rglob("*") if p.is_file())}
    assert shipped == clone
    assert Path(doc["runs"]) == tmp_path / "runs"  # installed: relative folders from the working directory
    assert (Path(doc["files"][0]).parent / "py.typed").is_file() and (Path(doc["files"][1]).parent / "py.typed").is_file()
    site = Path(doc["files"][0]).parent.parent
    assert not (site / "tests").exists() and {"asc", "probes", "ui", "asc_app"} <= {p.name for p in site.iterdir()}


def test_asc_explain_and_asc_probes_run_with_the_core_packages_only(core_bin, tmp_path):
    env = clean_env(**tiny_model_module(tmp_path / "models"))
    (tmp_path / "a.py").write_text(SRC)
    out = _run([core_bin / "asc", "explain", "a.py", "--model", "tiny-random", "--json"], tmp_path, env)
    assert out.returncode == 0, out.stderr[-3000:]
    doc = json.loads(out.stdout)
    assert "".join(t["text"] for t in doc["tokens"]) == SRC and doc["model"]["name"] == "tiny-random"
    assert {n["type"] for n in doc["nodes"]} >= {"function_definition", "return_statement", "binary_operator"}
    out = _run([core_bin / "asc-probes", "layers", "--help"], tmp_path, env)
    assert out.returncode == 0 and out.stdout.startswith("usage:") and "--model" in out.stdout, out.stderr


def test_features_of_a_missing_group_say_which_to_install(core_bin, tmp_path):
    env = clean_env(**tiny_model_module(tmp_path / "models"))
    (tmp_path / "a.py").write_text(SRC)
    ray = _run([core_bin / "asc", "eval", "--corpus", "a.py", "--min-lines", "1", "--out", "run", "--engine", "ray",
                "--model", "tiny-random", "--quiet"], tmp_path, env)
    studio = _run([core_bin / "asc-studio"], tmp_path, env)
    for out, extra in ((ray, "ray"), (studio, "app")):
        assert out.returncode == 2 and out.stderr.count("\n") == 1, out.stderr[-3000:]
        assert f"pip install 'asc-studio[{extra}]'" in out.stderr


# ------------------------------------------------------------------------------------------ asc-studio


@pytest.fixture(scope="module")
def studio(wheel, tmp_path_factory):
    """``asc-studio`` of a venv with the app group, on a free port, started in a folder outside the clone: (its
    process, its port, the address it printed, its working directory)."""
    work = tmp_path_factory.mktemp("studio")
    app_bin = fresh_venv(work / "venv", wheel, ["app"])
    port = free_port()
    env = clean_env(ASC_MODEL="tiny-random", **tiny_model_module(work / "models"))
    log = f"asc-studio-{port}.log"
    proc = start_app([str(app_bin / "asc-studio"), "--server.port", str(port), "--server.fileWatcherType", "none",
                      "--server.scriptHealthCheckEnabled", "true"], env, log, port, cwd=work)
    try:
        yield proc, port, printed_url(OUT / log), work
    finally:
        stop(proc)


def test_asc_studio_serves_the_installed_app_as_make_app_does(studio):
    """make app's defaults (this machine only, headless, a token in the printed address) and the installed app.py
    runs to its end: Streamlit's script health check runs it in a session of its own."""
    proc, port, url, work = studio
    assert re.fullmatch(rf"http://127\.0\.0\.1:{port}/\?token=\S{{32,}}", url)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    for path, body in (("_stcore/health", "ok"), ("_stcore/script-health-check", "ok")):
        with opener.open(f"http://127.0.0.1:{port}/{path}", timeout=120) as answer:
            assert answer.status == 200 and answer.read().decode() == body, path
    assert proc.poll() is None


@pytest.mark.browser
@pytest.mark.skipif(not has_chromium(), reason="Debian chromium not installed (make test does)")
def test_asc_studio_shows_the_inspector_in_a_browser(studio):
    from playwright.sync_api import expect

    _, _, url, _ = studio
    with chromium() as browser:
        page = browser.new_context().new_page()
        page.goto(url)
        expect(page.locator("h1", has_text="Completion inspector")).to_be_visible(timeout=300_000)
        page.screenshot(path=str(OUT / "asc-studio-inspector.png"))
