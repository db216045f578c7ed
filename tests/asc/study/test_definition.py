"""asc.study.definition: the shipped study loads, malformed files name the field."""

from __future__ import annotations

import pytest

from asc.errors import InputError
from asc.study.definition import DEFAULT_STUDY, LIKERT_LABELS, STUDY_VIEWS, load_study
from tests.helpers import broken_study, shipped_study_raw, write_study


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
        load_study(write_study(tmp_path, broken_study(edit)))
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
        load_study(write_study(tmp_path, shipped_study_raw(), "study.json").rename(tmp_path / "study.txt"))
    with pytest.raises(InputError, match="not found"):
        load_study(tmp_path / "absent.yaml")
    (tmp_path / "empty.yaml").write_text("# nothing\n", encoding="utf-8")
    with pytest.raises(InputError, match="empty.yaml: the study file is empty"):
        load_study(tmp_path / "empty.yaml")
    (tmp_path / "list.yaml").write_text("- 1\n", encoding="utf-8")
    with pytest.raises(InputError, match="list.yaml: expected a mapping"):
        load_study(tmp_path / "list.yaml")
    # the same content as JSON loads to the same definition
    assert load_study(write_study(tmp_path, shipped_study_raw(), "study.json")) == load_study(DEFAULT_STUDY)
