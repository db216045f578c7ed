"""ui/study.py: where the study's files live (from asc.paths) and the researcher password."""

import pytest

from asc.errors import InputError
from asc.paths import DEFAULT_STUDY
from ui import study as ui_study


def test_study_paths_default_to_the_shipped_study_under_runs(monkeypatch, tmp_path):
    for name in ("ASC_STUDY", "ASC_STUDY_DIR", "ASC_STUDY_DB"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    study, frozen, url = ui_study.study_paths()
    assert study == DEFAULT_STUDY
    assert frozen == tmp_path / "study" / "astxplainer-viz.frozen.json"
    assert url == f"sqlite:///{(tmp_path / 'study' / 'study.sqlite').resolve()}"


def test_study_paths_follow_the_variables(monkeypatch, tmp_path):
    from tests.helpers import tiny_study_raw, write_study

    path = write_study(tmp_path, tiny_study_raw(), "tiny.yaml")
    monkeypatch.setenv("ASC_STUDY", str(path))
    monkeypatch.setenv("ASC_STUDY_DIR", str(tmp_path / "data"))
    monkeypatch.setenv("ASC_STUDY_DB", "sqlite:///" + str(tmp_path / "other.db"))
    assert ui_study.study_paths() == (path, tmp_path / "data" / "tiny.frozen.json",
                                      "sqlite:///" + str(tmp_path / "other.db"))


def test_a_malformed_study_file_is_an_input_error(monkeypatch, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\n", encoding="utf-8")
    monkeypatch.setenv("ASC_STUDY", str(bad))
    with pytest.raises(InputError, match="bad.yaml"):
        ui_study.study_paths()


def test_password_from_the_environment_without_secrets(monkeypatch):
    monkeypatch.delenv("ASC_STUDY_PASSWORD", raising=False)
    assert ui_study.password() == ""
    monkeypatch.setenv("ASC_STUDY_PASSWORD", "s3cret")
    assert ui_study.password() == "s3cret"


def test_optional_questions_say_optional_once():
    from asc.study import load_study

    assert ui_study.optional_label("Anything else?") == "Anything else? (optional)"
    assert ui_study.optional_label("Any comments? (optional)") == "Any comments? (optional)"
    assert ui_study.optional_label("Any comments? (Optional) ") == "Any comments? (Optional) "
    shipped = load_study(DEFAULT_STUDY).comment  # its text says "(optional)" already
    assert ui_study.optional_label(shipped.text).count("(optional)") == 1


def test_a_rating_reads_as_its_label_from_one_up():
    labels = ("never", "rarely", "sometimes", "often", "always")
    assert [ui_study.rating_label(labels, v) for v in range(1, 6)] == list(labels)
