"""The glueCode task file (probes.gluecode.items): built items survive a save/load round trip, and a broken file is
refused with an error naming its line and the fix."""

import json
from pathlib import Path

import pytest

from asc.errors import InputError
from probes.gluecode.build import build_task_sets
from probes.gluecode.items import MASK, Item, by_split, load_items, npath_bucket, save_items, split_of


@pytest.fixture(scope="module")
def built():
    return build_task_sets(["NPATH", "OPS", "NAME", "CALL"], "algorithms", size=48, seed=0)


@pytest.mark.parametrize("task", ["NPATH", "OPS", "NAME", "CALL"])
def test_round_trip_of_built_items(built, task, tmp_path: Path):
    items, prov = built[task]
    path = save_items(tmp_path / f"{task}.jsonl", task, items, prov)
    header, loaded = load_items(path)
    assert loaded == items
    assert header["task"] == task and header["provenance"]["n_items"] == len(items)
    assert header["provenance"]["per_split"] == {s: len(by_split(items, s)) for s in ("dev", "test")}
    for it in loaded:
        assert it.context("function") == it.function
        assert it.context("file") == it.file
        assert it.context("callgraph") == (f"{it.callgraph}\n\n{it.file}" if it.callgraph else it.file)


def _item(**kw) -> Item:
    base = dict(task="OPS", id="OPS/x", split=split_of("m"), module="m", function=f"def f(a, b):\n    return a {MASK} b\n",
                label="+", candidates=("+", "-"), meta={"parses": ["+", "-"]})
    return Item(**{**base, **kw})


def _write(tmp_path: Path, rows: list) -> Path:
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n")
    return path


def _good_rows(tmp_path: Path) -> list:
    path = save_items(tmp_path / "good.jsonl", "OPS", [_item(), _item(id="OPS/y")], {"seed": 0})
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_bad_json_names_the_line(tmp_path: Path):
    rows = _good_rows(tmp_path)
    path = _write(tmp_path, [rows[0], rows[1], '{"task": "OPS", '])
    with pytest.raises(InputError, match=r"line 3: not JSON .*one JSON object per line"):
        load_items(path)


def test_unknown_task_names_the_line(tmp_path: Path):
    rows = _good_rows(tmp_path)
    rows[2]["task"] = "SORT"
    with pytest.raises(InputError, match=r"line 3: task 'SORT' is not one of NPATH, OPS"):
        load_items(_write(tmp_path, rows))


def test_label_not_among_candidates_names_the_line_and_fix(tmp_path: Path):
    rows = _good_rows(tmp_path)
    rows[1]["label"] = "*"
    with pytest.raises(InputError, match=r"line 2: the label '\*' is not among the candidates; add it"):
        load_items(_write(tmp_path, rows))


def test_missing_mask_names_the_line(tmp_path: Path):
    rows = _good_rows(tmp_path)
    rows[2]["function"] = "def f(a, b):\n    return a + b\n"
    with pytest.raises(InputError, match=rf"line 3: the function has no {MASK}"):
        load_items(_write(tmp_path, rows))


def test_header_duplicate_ids_and_missing_file(tmp_path: Path):
    rows = _good_rows(tmp_path)
    with pytest.raises(InputError, match="line 1: not a glueCode task file header"):
        load_items(_write(tmp_path, rows[1:]))
    rows[2]["id"] = rows[1]["id"]
    with pytest.raises(InputError, match="line 3: id 'OPS/x' is used twice"):
        load_items(_write(tmp_path, rows))
    with pytest.raises(InputError, match="no such task file"):
        load_items(tmp_path / "missing.jsonl")


def test_npath_buckets_bounds():
    assert [npath_bucket(v) for v in (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 15, 16, 20, 21, 30, 31, 50, 51, 100)] == [
        "1", "2", "3", "4", "5-6", "5-6", "7-8", "7-8", "9-10", "9-10", "11-15", "11-15", "16-20", "16-20", "21-30",
        "21-30", "31-50", "31-50", "51-100", "51-100"]
    assert npath_bucket(101) is None
