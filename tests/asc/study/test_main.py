"""``python -m asc.study check|prepare`` (asc/study/__main__.py): exit 0 with a summary line, or 2 with one
error line for a malformed file, a missing file or a model that cannot be loaded."""

from __future__ import annotations

import pytest

from asc.study.__main__ import main as study_cli
from asc.study.definition import DEFAULT_STUDY, load_study
from asc.study.frozen import frozen_path, load_frozen
from tests.helpers import broken_study, tiny_study_raw, write_study


def _one_error_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in err, err
    return lines[0]


def test_command_line_check_and_prepare(tmp_path, capsys, monkeypatch):
    assert study_cli(["check", str(DEFAULT_STUDY)]) == 0
    assert "4 groups, 4 samples: ok" in capsys.readouterr().out
    bad = write_study(tmp_path, broken_study(lambda d: d["groups"][1].update(view="tree")))
    assert study_cli(["check", str(bad)]) == 2
    assert "groups[1].view" in capsys.readouterr().err
    tiny_yaml = write_study(tmp_path, tiny_study_raw(), "tiny.yaml")
    monkeypatch.setenv("ASC_STUDY_DIR", str(tmp_path / "studies"))
    out = frozen_path(load_study(tiny_yaml))
    assert out == tmp_path / "studies" / "tiny.frozen.json"
    assert study_cli(["prepare", str(tiny_yaml)]) == 0  # loads model "tiny-random", writes to frozen_path
    frozen = load_frozen(out, load_study(tiny_yaml))
    assert [s.id for s in frozen.samples] == ["given", "gen"] and frozen.model["name"] == "tiny-random"


def test_check_prints_id_groups_and_samples(capsys):
    assert study_cli(["check", str(DEFAULT_STUDY)]) == 0
    captured = capsys.readouterr()
    assert captured.out == "astxplainer-viz: 4 groups, 4 samples: ok\n" and captured.err == ""


def test_malformed_file_is_one_line_naming_the_field(tmp_path, capsys):
    bad = write_study(tmp_path, broken_study(lambda d: d["samples"][2].pop("prompt")))
    for command in ("check", "prepare"):  # prepare validates before it loads anything
        assert study_cli([command, str(bad)]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        assert _one_error_line(captured.err) == "error: study.yaml: samples[2].prompt: missing"


def test_missing_file_is_one_line(tmp_path, capsys):
    assert study_cli(["check", str(tmp_path / "absent.yaml")]) == 2
    assert "not found" in _one_error_line(capsys.readouterr().err)


def test_a_study_whose_model_cannot_be_loaded_exits_2_with_one_line(tmp_path, capsys, monkeypatch):
    raw = {**tiny_study_raw(), "model": "no-such-model-xyz"}  # sample "gen" has no completion: prepare loads it
    assert any("completion" not in s for s in raw["samples"])
    path = write_study(tmp_path, raw, "unloadable.yaml")
    monkeypatch.setenv("ASC_STUDY_DIR", str(tmp_path / "studies"))
    assert study_cli(["check", str(path)]) == 0  # the file itself is fine
    capsys.readouterr()
    assert study_cli(["prepare", str(path)]) == 2
    captured = capsys.readouterr()
    line = _one_error_line(captured.err)
    assert "unknown model 'no-such-model-xyz'" in line and captured.out == ""
    assert not (tmp_path / "studies").exists()  # nothing written, not even the folder


def test_prepare_writes_where_out_says(tmp_path, capsys):
    path = write_study(tmp_path, tiny_study_raw(), "tiny.yaml")
    target = tmp_path / "elsewhere" / "t.json"
    assert study_cli(["prepare", str(path), "--out", str(target)]) == 0
    assert capsys.readouterr().out == f"prepared 2 samples of 'tiny': {target}\n"
    assert [s.id for s in load_frozen(target, load_study(path)).samples] == ["given", "gen"]


def test_a_command_is_required(capsys):
    with pytest.raises(SystemExit) as err:
        study_cli([])
    assert err.value.code == 2 and "required" in capsys.readouterr().err
