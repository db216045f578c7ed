"""Fixtures of the page tests: a prepared two-sample study on the tiny model."""

from __future__ import annotations

import pytest

TINY_STUDY = """\
id: tiny-study
title: Tiny study
model: tiny-random
consent: You agree to rate two samples.
groups:
  - {id: S2, name: AST partial, view: partial}
background:
  - {id: python, text: "How proficient are you in Python?", choices: [Novice, Expert]}
ratings:
  - {id: useful, text: The visualization is useful}
  - {id: readable, text: The visualization is easy to read}
comment: {id: comment, text: "Anything else?"}
samples:
  - {id: a, prompt: "def f(x):\\n", completion: "    return x\\n"}
  - {id: b, prompt: "def g(y):\\n", completion: "    return [y\\n"}
"""


@pytest.fixture
def tiny_study(monkeypatch, tmp_path):
    """TINY_STUDY as ``$ASC_STUDY``, prepared (frozen) with the tiny model; runs under ``tmp_path/runs``."""
    from asc.study.definition import load_study
    from asc.study.frozen import prepare_study, save_frozen
    from ui import cache
    from ui import study as ui_study

    path = tmp_path / "tiny.yaml"
    path.write_text(TINY_STUDY)
    monkeypatch.setenv("ASC_STUDY", str(path))
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    _, frozen_path, _ = ui_study.study_paths()
    frozen_path.parent.mkdir(parents=True, exist_ok=True)
    save_frozen(prepare_study(load_study(path), cache.get_bundle("tiny-random")), frozen_path)
    return path
