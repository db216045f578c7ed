"""asc.paths: every ASC_* variable is read when asked (not at import), relative folders are taken from the
app's folder (not the working directory), and the defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from asc import paths
from asc.errors import InputError

VARIABLES = ("ASC_RUNS_DIR", "ASC_CACHE_DIR", "ASC_DATA_ROOTS", "ASC_MODEL", "ASC_STUDY_MODE", "ASC_STUDY", "ASC_STUDY_DIR",
             "ASC_STUDY_DB", "ASC_STUDY_PASSWORD", "XDG_CACHE_HOME")


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)  # relative folders must not depend on the working directory


def test_app_root_and_assets():
    assert paths.APP_ROOT == Path(__file__).resolve().parents[2]  # the repository: app.py lives there
    assert (paths.APP_ROOT / "app.py").is_file()
    assert paths.ASSETS == paths.APP_ROOT / "assets" and paths.CATEGORIES_DIR.is_dir() and paths.EXAMPLES_DIR.is_dir()
    assert paths.DEFAULT_STUDY == paths.ASSETS / "studies" / "astxplainer.yaml" and paths.DEFAULT_STUDY.is_file()


def test_runs_dir_default_and_its_subfolders():
    assert paths.runs_dir() == paths.APP_ROOT / "runs"
    assert paths.layers_dir() == paths.APP_ROOT / "runs" / "layers"
    assert paths.attention_dir() == paths.APP_ROOT / "runs" / "attention"


def test_runs_dir_relative_is_taken_from_the_app_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("ASC_RUNS_DIR", "my-runs/sub")
    assert paths.runs_dir() == paths.APP_ROOT / "my-runs" / "sub"
    assert paths.runs_dir() != tmp_path / "my-runs" / "sub"  # not the working directory
    assert paths.layers_dir() == paths.APP_ROOT / "my-runs" / "sub" / "layers"


def test_runs_dir_absolute_and_home_and_blank(monkeypatch, tmp_path):
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "abs"))
    assert paths.runs_dir() == tmp_path / "abs"
    assert paths.attention_dir() == tmp_path / "abs" / "attention"
    monkeypatch.setenv("ASC_RUNS_DIR", f"  {tmp_path / 'padded'}  ")  # surrounding spaces are dropped
    assert paths.runs_dir() == tmp_path / "padded"
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("ASC_RUNS_DIR", "~/r")
    assert paths.runs_dir() == tmp_path / "home" / "r"
    monkeypatch.setenv("ASC_RUNS_DIR", "   ")  # blank counts as unset
    assert paths.runs_dir() == paths.APP_ROOT / "runs"


def test_variables_are_read_when_asked_not_at_import(monkeypatch, tmp_path):
    before = paths.runs_dir()
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "later"))
    assert paths.runs_dir() == tmp_path / "later" != before
    monkeypatch.delenv("ASC_RUNS_DIR")
    assert paths.runs_dir() == before


def test_study_dir_defaults_to_runs_study_and_follows_runs_dir(monkeypatch, tmp_path):
    assert paths.study_dir() == paths.APP_ROOT / "runs" / "study"
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "r"))
    assert paths.study_dir() == tmp_path / "r" / "study"
    monkeypatch.setenv("ASC_STUDY_DIR", "studies")  # relative: from the app folder, not from the runs
    assert paths.study_dir() == paths.APP_ROOT / "studies"
    monkeypatch.setenv("ASC_STUDY_DIR", str(tmp_path / "s"))
    assert paths.study_dir() == tmp_path / "s"


@pytest.mark.parametrize("value, expected", [
    ("", False), ("0", False), ("false", False), ("False", False), ("NO", False), (" 0 ", False), ("   ", False),
    ("1", True), ("true", True), ("yes", True), ("on", True), ("2", True),
])
def test_study_mode_values(monkeypatch, value, expected):
    monkeypatch.setenv("ASC_STUDY_MODE", value)
    assert paths.study_mode() is expected


def test_study_mode_off_when_unset():
    assert paths.study_mode() is False


def test_default_model_from_asc_model(monkeypatch):
    from asc.models import DEFAULT_MODEL

    assert paths.default_model() == DEFAULT_MODEL == "smollm2-135m"
    monkeypatch.setenv("ASC_MODEL", " tiny-random ")
    assert paths.default_model() == "tiny-random"
    monkeypatch.setenv("ASC_MODEL", "org/some-model")  # any spec load_model takes; not checked here
    assert paths.default_model() == "org/some-model"
    monkeypatch.setenv("ASC_MODEL", "")
    assert paths.default_model() == DEFAULT_MODEL


def test_study_file_db_and_password(monkeypatch, tmp_path):
    assert paths.study_file() == paths.DEFAULT_STUDY
    assert paths.study_db_url() == "" and paths.study_password() == ""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("ASC_STUDY", "~/s.yaml")
    assert paths.study_file() == tmp_path / "s.yaml"
    monkeypatch.setenv("ASC_STUDY_DB", " postgresql://u@h/db ")
    assert paths.study_db_url() == "postgresql://u@h/db"
    monkeypatch.setenv("ASC_STUDY_PASSWORD", " pass word ")  # a password is taken verbatim, spaces included
    assert paths.study_password() == " pass word "


def test_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.cache_dir() == tmp_path / "home" / ".cache" / "asc-studio"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.cache_dir() == tmp_path / "xdg" / "asc-studio"
    monkeypatch.setenv("ASC_CACHE_DIR", str(tmp_path / "models"))  # the folder itself, no asc-studio added
    assert paths.cache_dir() == tmp_path / "models"


def test_data_roots_unset_is_none_else_folders_like_runs_dir(monkeypatch, tmp_path):
    import os

    assert paths.data_roots() is None
    monkeypatch.setenv("ASC_DATA_ROOTS", os.pathsep.join(["corpora", f" {tmp_path / 'abs'} ", ""]))
    assert paths.data_roots() == [paths.APP_ROOT / "corpora", tmp_path / "abs"]  # blanks dropped
    monkeypatch.setenv("ASC_DATA_ROOTS", " ")
    assert paths.data_roots() is None


def test_model_modules_are_dotted_names(monkeypatch):
    monkeypatch.setenv("ASC_MODEL_MODULES", " tests.support.models , other_pkg.models ,")
    assert paths.model_modules() == ("tests.support.models", "other_pkg.models")
    monkeypatch.setenv("ASC_MODEL_MODULES", "tests/support/models.py")
    with pytest.raises(InputError, match="module names such as"):
        paths.model_modules()
