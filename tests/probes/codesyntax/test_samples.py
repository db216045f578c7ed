"""probes.codesyntax.samples: the CodeSyntax sample (tokens, spans, relation edges) and its JSON files, validated
field by field; files without spans (the published ones) get located spans."""

from __future__ import annotations

import io
import json
import tokenize

import pytest

from asc.errors import InputError
from probes.codesyntax.relations import extract
from probes.codesyntax.samples import RELATIONS, Sample, read_json, write_json
from tests.helpers import BIG, IF_CODE, check_spans


def test_relations_names():
    assert len(RELATIONS) == 44 and len(set(RELATIONS)) == 44
    assert RELATIONS[:3] == ("If:if->else", "If:if->test", "If:if->body")
    assert RELATIONS[-2:] == ("comprehension:target->iter", "children:parent->child")
    assert set(extract("x = 1\n").relns) == set(RELATIONS)


def test_json_round_trip(tmp_path):
    samples = [extract(BIG), extract(IF_CODE.replace("\n", "\r\n")), extract('s = "é"\n')]
    path = tmp_path / "cs.json"
    write_json(samples, path)
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert [d["id"] for d in raw] == [0, 1, 2]
    assert set(raw[2]) == {"id", "code", "tokens", "spans", "relns"}
    assert set(raw[2]["relns"]) == {"Assign:target->value", "children:parent->child"}  # no empty ones
    assert raw[2]["relns"]["Assign:target->value"] == [[0, 2, 2]]
    assert read_json(path) == samples


def test_read_published_layout_without_spans(tmp_path):
    code = "def f(a):  # c\n\n    if a:\n        return (a,\n\n  # z\n            2)\n    return 1\n"
    # the authors' tokens: every token tokenize yields, NL, COMMENT and ENDMARKER included
    toks = [t.string for t in tokenize.generate_tokens(io.StringIO(code).readline)]
    assert "# c" in toks and "# z" in toks
    path = tmp_path / "published.json"
    path.write_text(json.dumps([{"tokens": toks, "id": 0, "code": code, "relns": {"If:if->test": [[10, 11, 11]]}}]))
    (back,) = read_json(path)
    check_spans(back)
    assert back.tokens[10:12] == ("if", "a")
    assert back.spans[toks.index("# z")] == (code.index("# z"), code.index("# z") + 3)
    assert list(back.relns["If:if->test"]) == [(10, 11, 11)] and list(back.relns["For:for->body"]) == []
    # our own file without spans: the located spans are the extracted ones, DEDENT included
    s = extract(code)
    d = s.to_json()
    del d["spans"]
    assert Sample.from_json(d) == s


def test_invalid_json_raises_value_error(tmp_path):
    good = extract("x = y\n").to_json()  # tokens: x = y \n
    with pytest.raises(ValueError, match=r"sample 3: field \"relns\['Assign:target->value'\]\[0\]\""):
        Sample.from_json({**good, "relns": {"Assign:target->value": [[0, 2, 9]]}}, index=3)
    for edge in ([2, 0, 0], [0, 2, 1], [0, 2], [0, True, 2], [-1, 2, 2]):
        with pytest.raises(ValueError, match="relns"):
            Sample.from_json({**good, "relns": {"Assign:target->value": [edge]}})
    with pytest.raises(ValueError, match=r"field 'spans\[0\]'"):
        Sample.from_json({**good, "spans": [[1, 2], [2, 3], [4, 5], [5, 6]]})
    with pytest.raises(ValueError, match="field 'spans'"):
        Sample.from_json({**good, "spans": [[0, 1]]})
    with pytest.raises(ValueError, match="field 'code'"):
        Sample.from_json({"tokens": ["x"], "relns": {}})
    with pytest.raises(ValueError, match=r"field 'tokens\[1\]'"):
        Sample.from_json({"code": "x = 1\n", "tokens": ["x", "+"], "relns": {}})
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([good, {**good, "id": 7, "relns": {"Assign:target->value": [[0, 2, 4]]}}]))
    with pytest.raises(ValueError, match=r"sample 1 \(id 7\)"):
        read_json(path)


def test_invalid_fields_name_the_sample_and_the_field(tmp_path):
    good = {"code": "x = y\n", "tokens": ["x", "=", "y", "\n"], "relns": {}}
    with pytest.raises(InputError, match="sample 2: expected a JSON object, got list"):
        Sample.from_json([1, 2], index=2)
    with pytest.raises(InputError, match="field 'tokens': missing or not a list of strings"):
        Sample.from_json({**good, "tokens": ["x", 1]})
    with pytest.raises(InputError, match="field 'relns': not an object"):
        Sample.from_json({**good, "relns": [[0, 2, 2]]})
    with pytest.raises(InputError, match=r"field \"relns\['R'\]\": not a list"):
        Sample.from_json({**good, "relns": {"R": "0 2 2"}})
    with pytest.raises(InputError, match=r"sample \(id 'q7'\): field 'code'"):
        Sample.from_json({**good, "id": "q7", "code": None})
    with pytest.raises(InputError, match=r"code\[0:1\] is not the token '='"):
        Sample.from_json({**good, "spans": [[0, 1], [0, 1], [4, 5], [5, 6]]})


def test_every_relation_is_present_and_empty_ones_are_not_written():
    s = Sample.from_json({"code": "x = y\n", "tokens": ["x", "=", "y", "\n"],
                          "relns": {"Assign:target->value": [[0, 2, 2]]}})
    assert list(s.relns) == list(RELATIONS) and s.relns["Assign:target->value"] == ((0, 2, 2),)
    assert sum(len(e) for e in s.relns.values()) == 1
    assert s.spans == ((0, 1), (2, 3), (4, 5), (5, 6))  # located: the input had none
    assert s.to_json() == {"code": "x = y\n", "tokens": ["x", "=", "y", "\n"],
                           "spans": [[0, 1], [2, 3], [4, 5], [5, 6]], "relns": {"Assign:target->value": [[0, 2, 2]]}}


def test_located_spans_place_empty_tokens_at_the_next_token():
    code = "if a:\n    b\nc\n"
    s = Sample.from_json({"code": code, "tokens": ["if", "a", ":", "\n", "    ", "b", "\n", "", "c", "\n", ""]})
    check_spans(s)
    assert s.spans[4] == (6, 10)  # INDENT: the leading spaces of its line
    assert s.spans[7] == (code.index("c"), code.index("c")) == s.spans[8][:1] * 2  # DEDENT: where c starts
    assert s.spans[10] == (len(code), len(code))  # ENDMARKER: at the end
    with pytest.raises(InputError, match=r"field 'tokens\[1\]': token 'z' not found in the code after offset 2"):
        Sample.from_json({"code": code, "tokens": ["if", "z"]})


def test_unreadable_and_wrong_shaped_files(tmp_path):
    with pytest.raises(InputError, match="cannot read a CodeSyntax JSON file"):
        read_json(tmp_path / "absent.json")
    (tmp_path / "bad.json").write_text("[{", encoding="utf-8")
    with pytest.raises(InputError, match="bad.json: cannot read a CodeSyntax JSON file"):
        read_json(tmp_path / "bad.json")
    (tmp_path / "obj.json").write_text('{"code": "x"}', encoding="utf-8")
    with pytest.raises(InputError, match="obj.json: expected a JSON list of samples, got dict"):
        read_json(tmp_path / "obj.json")
    write_json([], tmp_path / "empty.json")
    assert read_json(tmp_path / "empty.json") == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.json", "empty.json", "obj.json"]  # no temporaries
