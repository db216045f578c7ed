"""asc.study.definition: the shipped study loads, malformed files name the field, preparation freezes content."""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import yaml

from asc.errors import InputError
from asc.explain import explain_scored
from asc.scores import encode
from asc.study.__main__ import main as study_cli
from asc.study.definition import DEFAULT_STUDY, LIKERT_LABELS, STUDY_VIEWS, load_study, parse_study
from asc.study.frozen import content_hash, frozen_explanation, frozen_path, load_frozen, prepare_study, save_frozen


def test_shipped_study_is_the_papers_design():
    d = load_study(DEFAULT_STUDY)
    assert d.model == "smollm2-135m" and d.language == "python" and not d.collect_personal_data
    assert {g.view for g in d.groups} == set(STUDY_VIEWS)
    assert [(g.id, g.view) for g in d.groups] == [("C", "none"), ("S1", "sequence"), ("S2", "partial"),
                                                  ("S3", "complete")]
    assert {"python", "code_llms", "ast", "ml_education"} <= {q.id for q in d.background}
    assert all(q.kind == "choice" and q.required for q in d.background if q.id != "llm_problems")
    assert [q.id for q in d.ratings] == ["useful", "readable", "complex"]
    assert all(q.kind == "likert" and q.labels == LIKERT_LABELS for q in d.ratings)
    assert d.comment is not None and not d.comment.required
    assert len(d.samples) == 4 and all(s.completion is None for s in d.samples)
    assert all(len(s.prompt.splitlines()) <= 12 for s in d.samples)
    assert d.consent.strip() and d.path == str(DEFAULT_STUDY)


def _raw() -> dict:
    return yaml.safe_load(DEFAULT_STUDY.read_text(encoding="utf-8"))


def _write(tmp_path, data, name="study.yaml"):
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if name.endswith((".yaml", ".yml")) else json.dumps(data), encoding="utf-8")
    return path


def _broken(edit):
    data = copy.deepcopy(_raw())
    edit(data)
    return data


@pytest.mark.parametrize("edit, expected", [
    (lambda d: d["samples"][2].pop("prompt"), "study.yaml: samples[2].prompt: missing"),
    (lambda d: d["groups"][1].update(view="tree"),
     "groups[1].view: 'tree' is not one of none, sequence, partial, complete"),
    (lambda d: d["samples"][1].update(id=d["samples"][0]["id"]), "samples[1].id: duplicate id"),
    (lambda d: d["ratings"].append({"id": "python", "text": "again"}), "ratings[3].id: duplicate id 'python'"),
    (lambda d: d["samples"][0].update(promt="x"), "samples[0].promt: unknown key"),
    (lambda d: d.update(modle="x"), "modle: unknown key"),
    (lambda d: d.update(groups=[]), "groups: empty list"),
    (lambda d: d.pop("model"), "model: missing"),
    (lambda d: d["background"][0].update(choices="Novice"), "background[0].choices: expected a list"),
    (lambda d: d["ratings"][0].update(scale="likert7"), "ratings[0].scale: 'likert7' is not supported"),
    (lambda d: d["samples"][3].update(max_new_tokens=0), "samples[3].max_new_tokens"),
    (lambda d: d["groups"][0].update(id="C D"), "groups[0].id: 'C D' is not a valid id"),
    (lambda d: d.update(personal_fields=[{"id": "email", "text": "E-mail"}]),
     "personal_fields: given, but collect_personal_data is false"),
    (lambda d: d.update(collect_personal_data="yes"), "collect_personal_data: expected true or false"),
    (lambda d: d.update(language="cobol"), "language: 'cobol' is not one of"),
])
def test_malformed_study_names_the_field(tmp_path, edit, expected):
    with pytest.raises(InputError) as err:
        load_study(_write(tmp_path, _broken(edit)))
    assert expected in str(err.value)


def test_bad_yaml_json_and_extension(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("id: x\ngroups: [unclosed\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.yaml: not valid YAML \(line"):
        load_study(bad)
    bad_json = tmp_path / "bad.json"
    bad_json.write_text("{", encoding="utf-8")
    with pytest.raises(InputError, match=r"bad\.json: not valid JSON"):
        load_study(bad_json)
    with pytest.raises(InputError, match="must end in .yaml, .yml or .json"):
        load_study(_write(tmp_path, _raw(), "study.json").rename(tmp_path / "study.txt"))
    with pytest.raises(InputError, match="not found"):
        load_study(tmp_path / "absent.yaml")
    (tmp_path / "empty.yaml").write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(InputError, match="empty.yaml: the study file is empty"):
        load_study(tmp_path / "empty.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n", encoding="utf-8")
    with pytest.raises(InputError, match="list.yaml: expected a mapping"):
        load_study(tmp_path / "list.yaml")
    # the same content as JSON loads to the same definition
    assert load_study(_write(tmp_path, _raw(), "study.json")) == load_study(DEFAULT_STUDY)


def _tiny_definition(**sample_changes):
    samples = [{"id": "given", "prompt": "def f(x):\n", "completion": "    return x + 1\n"},
               {"id": "gen", "prompt": "def add(a, b):\n    s = a", "max_new_tokens": 4}]
    samples[1].update(sample_changes)
    return parse_study({
        "id": "tiny", "title": "Tiny", "model": "tiny-random", "consent": "ok",
        "groups": [{"id": "C", "view": "none"}, {"id": "S2", "view": "partial"}],
        "background": [{"id": "python", "text": "Python?", "choices": ["a", "b"]}],
        "ratings": [{"id": "useful", "text": "Useful?"}], "samples": samples,
    }, "tiny.yaml")


def test_prepare_freeze_and_rebuild_without_model(tiny, tmp_path):
    d = _tiny_definition()
    frozen = prepare_study(d, tiny)
    given, gen = frozen.sample("given"), frozen.sample("gen")
    # a given completion is kept verbatim; n_prompt counts the tokens the prompt alone tokenizes to
    assert (given.prompt, given.completion, given.generated, given.stop_reason) == (
        "def f(x):\n", "    return x + 1\n", False, None)
    ids_prompt = encode(tiny, given.prompt)[0].tolist()
    assert given.scores.ids[: given.n_prompt].tolist() == ids_prompt[: given.n_prompt]
    assert 0 < given.n_prompt <= len(ids_prompt) and given.scores.source == given.text
    assert gen.generated and gen.stop_reason in {"function_end", "eos", "max_new_tokens"}
    assert gen.text.startswith("def add(a, b):\n    s = a") and gen.n_prompt == len(encode(tiny, gen.prompt)[0])

    path = save_frozen(frozen, tmp_path / "sub" / "tiny.frozen.json")
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    loaded = load_frozen(path, d)
    assert loaded.definition_hash == content_hash(d) and [s.id for s in loaded.samples] == ["given", "gen"]
    for before, after in zip(frozen.samples, loaded.samples, strict=True):
        assert (after.prompt, after.completion, after.n_prompt) == (before.prompt, before.completion, before.n_prompt)
        ex, n_prompt = frozen_explanation(after)
        reference = explain_scored(before.model, before.scores, "python", "median")
        assert n_prompt == before.n_prompt
        assert ex.to_dict() == reference.to_dict()
        np.testing.assert_array_equal(ex.values, reference.values)
        np.testing.assert_array_equal(after.scores.top_probs, before.scores.top_probs)
        assert after.scores.top_text == before.scores.top_text


def test_frozen_file_refused_after_the_samples_change(tiny, tmp_path):
    path = save_frozen(prepare_study(_tiny_definition(), tiny), tmp_path / "f.json")
    changed = _tiny_definition(prompt="def sub(a, b):\n    s = a")
    with pytest.raises(InputError, match="prepare the study again"):
        load_frozen(path, changed)
    # wording of questions is not part of the frozen content: no new preparation needed
    reworded = parse_study({**_raw_tiny(), "ratings": [{"id": "useful", "text": "Is it useful?"}]}, "tiny.yaml")
    assert load_frozen(path, reworded).study_id == "tiny"
    with pytest.raises(InputError, match="prepare it first"):
        load_frozen(tmp_path / "absent.json", changed)
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="prepare it again"):
        load_frozen(tmp_path / "broken.json", changed)


def _raw_tiny() -> dict:
    d = _tiny_definition()
    return {"id": d.id, "title": d.title, "model": d.model, "consent": d.consent,
            "groups": [{"id": g.id, "view": g.view} for g in d.groups],
            "background": [{"id": "python", "text": "Python?", "choices": ["a", "b"]}],
            "ratings": [{"id": "useful", "text": "Useful?"}],
            "samples": [{k: v for k, v in s.__dict__.items() if v is not None} for s in d.samples]}



def test_command_line_check_and_prepare(tmp_path, capsys, monkeypatch):
    assert study_cli(["check", str(DEFAULT_STUDY)]) == 0
    assert "4 groups, 4 samples: ok" in capsys.readouterr().out
    bad = _write(tmp_path, _broken(lambda d: d["groups"][1].update(view="tree")))
    assert study_cli(["check", str(bad)]) == 2
    assert "groups[1].view" in capsys.readouterr().err
    tiny_yaml = _write(tmp_path, _raw_tiny(), "tiny.yaml")
    monkeypatch.setenv("ASC_STUDY_DIR", str(tmp_path / "studies"))
    out = frozen_path(load_study(tiny_yaml))
    assert out == tmp_path / "studies" / "tiny.frozen.json"
    assert study_cli(["prepare", str(tiny_yaml)]) == 0  # loads model "tiny-random", writes to frozen_path
    frozen = load_frozen(out, load_study(tiny_yaml))
    assert [s.id for s in frozen.samples] == ["given", "gen"] and frozen.model["name"] == "tiny-random"
