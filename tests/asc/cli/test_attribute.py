"""``python -m asc attribute`` (asc.cli.attribute): the --json layout, the table, and one line + exit 2 for a
bad position, contrast or setting. Run in process (``asc.cli.main``) on the tiny model, and once as users run
it, in a subprocess."""

from __future__ import annotations

import json
import math
import re

import pytest

from asc.cli import main
from asc.concepts import load_categories
from tests.helpers import run_module

SRC = ("def count_chars(string, character):\n    count = 0\n    for letter in string:\n"
       "        if letter == character:\n            count += 1\n    return count\n")


@pytest.fixture(scope="module")
def source_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("attr") / "a.py"
    path.write_text(SRC)
    return str(path)


def _run(capsys, *args):
    code = main(["attribute", *args, "--model", "tiny-random"])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_has_the_explain_layout_with_attributions_and_the_target(capsys, source_file):
    code, out, err = _run(capsys, source_file, "--at", "6:12", "--method", "ig", "--steps", "8", "--json")
    assert code == 0, err
    doc = json.loads(out)
    target = doc["target"]
    assert set(target) >= {"index", "text", "logprob", "contrast", "method", "steps", "baseline_value"}
    assert target["method"] == "ig" and target["steps"] == 8 and target["contrast"] is None
    assert target["text"].strip() == "count"
    tokens, index = doc["tokens"], target["index"]
    assert all("attribution" in t for t in tokens) and all("attribution" in n for n in doc["nodes"])
    assert all(t["attribution"] is None for t in tokens[index:])
    assert tokens[0]["attribution"] is None and target["sink_held"] is True  # the first token: the held sink
    assert all(isinstance(t["attribution"], float) for t in tokens[1:index])
    assert target["logprob"] == pytest.approx(tokens[index]["logprob"], abs=1e-6)
    # completeness can be checked from the output alone (the tiny model's path is smooth: well within 1%)
    total = sum(t["attribution"] for t in tokens[1:index])
    assert total == pytest.approx(target["value"] - target["baseline_value"], rel=0.01)
    assert doc["nodes"][0]["attribution"] == pytest.approx(total)
    assert set(doc["categories_attribution"]) == set(load_categories("python").categories)
    assert doc["categories_attribution"]["Exceptions"] is None


def test_no_hold_sink_attributes_the_first_token_and_a_large_gap_is_pointed_out(capsys, source_file):
    code, out, err = _run(capsys, source_file, "--at", "6:12", "--method", "ig", "--steps", "8", "--no-hold-sink",
                          "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"]["sink_held"] is False and isinstance(doc["tokens"][0]["attribution"], float)
    code, out, err = _run(capsys, source_file, "--at", "6:12", "--method", "ig", "--steps", "1")
    assert code == 0, err
    assert "first token held: the attention sink" in out
    head = out.split("\n\n")[0]
    value, base, total = (float(re.search(rf"{k} (-?[0-9.]+)", head).group(1))
                          for k in ("value", "at the baseline", "sum of attributions"))
    gap = abs(total - (value - base)) / abs(value - base)
    assert ("more --steps (e.g. 4, or auto) bring the sum closer" in out) == (gap > 0.01), out


def test_auto_steps_run_until_the_gap_is_within_one_percent(capsys, source_file):
    code, out, err = _run(capsys, source_file, "--at", "6:12", "--method", "ig", "--steps", "auto", "--json")
    assert code == 0, err
    target = json.loads(out)["target"]
    gap = abs(sum(t["attribution"] or 0.0 for t in json.loads(out)["tokens"]) - (target["value"]
                                                                              - target["baseline_value"]))
    assert isinstance(target["steps"], int) and target["steps"] >= 16
    assert gap <= 0.01 * abs(target["value"] - target["baseline_value"]) or target["steps"] == 256
    code, out, err = _run(capsys, source_file, "--at", "6:12", "--method", "ig", "--steps", "auto")
    assert code == 0 and f"({target['steps']} steps (auto), pad baseline" in out
    with pytest.raises(SystemExit) as stop:
        _run(capsys, source_file, "--at", "6:12", "--method", "ig", "--steps", "some")
    assert stop.value.code == 2 and "'some' is not a whole number; or give auto" in capsys.readouterr().err


def test_table_lists_top_nodes_and_categories(capsys, source_file):
    top = load_categories("python").categories[0]
    code, out, err = _run(capsys, source_file, "--at", "6:12", "--top", "3")
    assert code == 0, err
    assert "method grad" in out and "' count'" in out and top in out
    rows = [line for line in out.splitlines() if line[:5].strip().isdigit()]
    assert len(rows) == 3


def test_contrast_and_occlusion(capsys, source_file):
    code, out, err = _run(capsys, source_file, "--at", "6:12", "--json")
    plain = json.loads(out)
    actual = plain["target"]["text"]
    alt = next(t["text"] for t in plain["tokens"][plain["target"]["index"]]["top"] if t["text"] not in (actual, ""))
    code, out, err = _run(capsys, source_file, "--at", "6:12", "--contrast", alt, "--method", "occlusion", "--json")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["target"]["contrast"] == alt and doc["target"]["method"] == "occlusion"
    assert all(t["attribution"] is None for t in doc["tokens"])
    assert any(n["attribution"] is not None and not math.isnan(n["attribution"]) for n in doc["nodes"])


@pytest.mark.parametrize("args,needle", [
    (["--at", "99:1"], "outside the snippet"),
    (["--at", "1:400"], "outside the snippet"),
    (["--at", "1:1"], "has no prediction"),
    (["--at", "6:12", "--contrast", "count = count + 1"], "give one token"),
])
def test_bad_position_or_contrast_is_one_line_and_exit_2(capsys, source_file, args, needle):
    code, out, err = _run(capsys, source_file, *args)
    assert code == 2 and out == ""
    assert needle in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.slow
def test_as_users_run_it(source_file):
    out = run_module("asc", "attribute", source_file, "--at", "6:x", "--model", "tiny-random")
    assert out.returncode == 2 and b"is not LINE:COL" in out.stderr
    out = run_module("asc", "attribute", source_file, "--at", "4:12", "--model", "tiny-random", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["target"]["method"] == "grad"
