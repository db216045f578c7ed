"""tests/conftest.py's guard: a test that loads an embedded real model without ``@pytest.mark.real`` fails,
directly, through a fixture, or when it swallows the failure; real-marked tests and the tiny model pass.
Also: the default runs folder of every test is a temporary one."""

import pytest

from tests.helpers import run_module

CONFTEST = """\
from tests.conftest import *  # noqa: F401,F403
from tests.conftest import _guard_real_models, _no_swallowed_real_load  # noqa: F401
"""

TESTS = """\
import pytest

from asc.models import load_model


def test_unmarked_loads_smollm2():
    load_model("smollm2-135m")


def test_unmarked_swallows_the_failure():
    try:
        load_model("minilm-l6")
    except BaseException:
        pass


@pytest.fixture
def gemma():
    return load_model("gemma3-270m")


def test_unmarked_fixture(gemma):
    pass


def test_tiny_is_allowed():
    assert load_model("tiny-random").name == "tiny-random"


def test_unknown_names_are_still_errors():
    with pytest.raises(Exception, match="unknown model"):
        load_model("no-such-model-xyz")


@pytest.mark.real
def test_marked_real_reaches_the_loader(monkeypatch):
    import asc.models

    monkeypatch.setattr(asc.models, "_package_dir", lambda *a: (_ for _ in ()).throw(LookupError("loader reached")))
    with pytest.raises(LookupError, match="loader reached"):  # past the guard, stopped before any weights load
        load_model("minilm-l6")
"""


@pytest.mark.slow
def test_unmarked_real_model_loads_fail(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_guarded.py").write_text(TESTS)
    out = run_module("pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist", "-c", "/dev/null", "--rootdir",
                     str(tmp_path), "-o", "markers=real", str(tmp_path / "test_guarded.py"), timeout=300)
    text = out.stdout.decode()
    assert out.returncode == 1, text
    assert "1 failed, 4 passed, 2 errors" in text, text
    for name, model in (("test_unmarked_loads_smollm2", "smollm2-135m"), ("test_unmarked_swallows_the_failure",
                                                                           "minilm-l6"),
                        ("test_unmarked_fixture", "gemma3-270m")):
        assert f"test_guarded.py::{name} loads the real model '{model}' but is not marked @pytest.mark.real" in text
    summary = [line for line in text.splitlines() if line.startswith(("FAILED ", "ERROR "))]
    assert [(line.split()[0], line.split("::")[1].split()[0]) for line in summary] == [
        ("FAILED", "test_unmarked_loads_smollm2"), ("ERROR", "test_unmarked_swallows_the_failure"),
        ("ERROR", "test_unmarked_fixture")]  # one report per test
    assert "ERROR at teardown of test_unmarked_swallows_the_failure" in text
    assert "ERROR at setup of test_unmarked_fixture" in text


def test_the_default_runs_folder_is_a_temporary_one(tmp_path_factory):
    """What a test opens with the defaults (the study page creates its database in ``<runs>/study``) never writes
    into the checkout: tests/conftest.py points ``ASC_RUNS_DIR`` at a fresh temporary folder per test."""
    from asc import paths

    runs = paths.runs_dir()
    assert not runs.is_relative_to(paths.APP_ROOT)
    assert runs.is_relative_to(tmp_path_factory.getbasetemp())
    assert paths.study_dir() == runs / "study"
