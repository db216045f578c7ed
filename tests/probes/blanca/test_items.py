"""The BLANCA task file (probes.blanca.items): every task's items survive a save/load round trip, and a broken file
is refused with an error naming its line and the fix."""

import json
from pathlib import Path

import pytest

from asc.errors import InputError
from probes.blanca.items import PairItem, RankItem, ScoredPairItem, load_items, save_items, split_of, target_kind

ITEMS = {
    "R": [RankItem("R/1", "train", "How do I sort?", ("Use sorted().", "Use a loop."), (1.0, 0.0), {"page": "faq"}),
          RankItem("R/2", "test", "Why tabs?", ("Style.", "Speed.", "Habit."), (3.0, 0.0, 1.0))],
    "L": [PairItem("L", "L/1", "train", "post a", "post b", True, name_a="a", name_b="b"),
          PairItem("L", "L/2", "test", "post a", "post c", False)],
    "F": [PairItem("F", "F/1", "train", "answer", "class doc", True, "g1", "q1", "collections.deque"),
          PairItem("F", "F/2", "train", "answer", "other doc", False, "g1", "q1", "collections.Counter")],
    "H": [ScoredPairItem("H", "H/1", "train", "doc a", "doc b", 2.0, "m.A", "m.B")],
    "U": [ScoredPairItem("U", "U/1", "test", "doc a", "doc b", 0.5, "m.A", "m.B", {"shared": ["get"]})],
}


@pytest.mark.parametrize("task", list(ITEMS))
def test_round_trip_of_every_task(task, tmp_path: Path):
    path = save_items(tmp_path / f"{task}.jsonl", task, ITEMS[task], {"source": "hand"})
    header, loaded = load_items(path)
    assert loaded == ITEMS[task]
    assert header["task"] == task and header["provenance"] == {"source": "hand"}
    rows = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    assert all("task" not in row for row in rows)  # the header carries the task


def test_optional_fields_are_left_out_of_rows(tmp_path: Path):
    path = save_items(tmp_path / "L.jsonl", "L", ITEMS["L"])
    second = json.loads(path.read_text().splitlines()[2])
    assert set(second) == {"id", "split", "text_a", "text_b", "positive"}


def _write(tmp_path: Path, header: dict, rows: list) -> Path:
    path = tmp_path / "t.jsonl"
    lines = [json.dumps(header)] + [r if isinstance(r, str) else json.dumps(r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


HEADER = {"format": "asc-blanca", "version": 1, "task": "R", "provenance": {}}
GOOD_R = {"id": "R/1", "split": "train", "question": "q", "answers": ["a", "b"], "grades": [1, 0]}


@pytest.mark.parametrize(("change", "message"), [
    ({"grades": [1]}, r"line 3: grades must be a list of numbers, one per answer \(2\)"),
    ({"grades": [-1, 2]}, r"line 3: grades must be >= 0 .*shift negative votes up"),
    ({"grades": [0, 0]}, r"line 3: grades must be >= 0 with at least one above 0"),
    ({"answers": ["only one"], "grades": [1]}, r"line 3: answers must be a list of two or more"),
    ({"split": "dev"}, r"line 3: split 'dev' is not one of train, test"),
    ({"votes": [1, 2]}, r"line 3: unknown field votes for task R; its fields are id, split, question"),
    ({"question": "  "}, r"line 3: question must be non-empty text"),
    ({"task": "L"}, r"line 3: task 'L' in a R file"),
])
def test_bad_rank_rows_name_the_line_and_fix(tmp_path: Path, change, message):
    path = _write(tmp_path, HEADER, [GOOD_R, {**GOOD_R, "id": "R/2", **change}])
    with pytest.raises(InputError, match=message):
        load_items(path)


def test_bad_json_duplicate_id_and_header(tmp_path: Path):
    with pytest.raises(InputError, match=r"line 2: not JSON .*one JSON object per line"):
        load_items(_write(tmp_path, HEADER, ['{"id": ']))
    with pytest.raises(InputError, match=r"line 3: id 'R/1' is used twice"):
        load_items(_write(tmp_path, HEADER, [GOOD_R, GOOD_R]))
    with pytest.raises(InputError, match=r"line 1: not a BLANCA task file header"):
        load_items(_write(tmp_path, {**HEADER, "format": "asc-gluecode"}, [GOOD_R]))
    with pytest.raises(InputError, match=r"line 1: target 'distance': only H and U files have one"):
        load_items(_write(tmp_path, {**HEADER, "target": "distance"}, [GOOD_R]))
    with pytest.raises(InputError, match="no such BLANCA task file"):
        load_items(tmp_path / "missing.jsonl")


def test_pair_and_scored_rows_are_checked(tmp_path: Path):
    pair = {"id": "L/1", "split": "train", "text_a": "a", "text_b": "b", "positive": 1}
    with pytest.raises(InputError, match=r"line 2: positive must be true or false"):
        load_items(_write(tmp_path, {**HEADER, "task": "L"}, [pair]))
    scored = {"id": "H/1", "split": "train", "text_a": "a", "text_b": "b", "target": 1.5, "name_a": "A", "name_b": "B"}
    with pytest.raises(InputError, match=r"line 2: an H distance is a whole number >= 1 \(got 1.5\)"):
        load_items(_write(tmp_path, {**HEADER, "task": "H"}, [scored]))
    with pytest.raises(InputError, match=r"line 2: name_b must be non-empty text"):
        load_items(_write(tmp_path, {**HEADER, "task": "U"}, [{**scored, "name_b": ""}]))
    with pytest.raises(InputError, match=r"line 2: target must be a finite number"):
        load_items(_write(tmp_path, {**HEADER, "task": "U"}, [{**scored, "target": "near"}]))


def test_target_kind_defaults_and_the_papers_usage_distance(tmp_path: Path):
    # the paper's U files hold a usage distance (312 on average): the header says so, any number is allowed
    paper_u = ScoredPairItem("U", "U/1", "train", "doc a", "doc b", 312.2, "m.A", "m.B")
    header, items = load_items(save_items(tmp_path / "U.jsonl", "U", [paper_u], target="distance"))
    assert target_kind(header) == "distance" and items[0].target == 312.2
    assert target_kind({"task": "H"}) == "distance" and target_kind({"task": "U"}) == "similarity"


def test_save_refuses_items_of_another_task(tmp_path: Path):
    with pytest.raises(InputError, match="item 'L/1' is a L item; a F file holds F items only"):
        save_items(tmp_path / "F.jsonl", "F", ITEMS["L"])
    with pytest.raises(InputError, match="task 'X'"):
        save_items(tmp_path / "X.jsonl", "X", [])
    assert not (tmp_path / "F.jsonl").exists()


def test_split_of_is_stable_and_near_the_share():
    """The split of a unit must not depend on the process (Python's str hash is salted per process): another
    interpreter, with another hash seed, splits 200 units the same way."""
    import os
    import subprocess
    import sys

    units = [f"faq/programming#q{i}" for i in range(200)]
    script = ("import json, sys; from probes.blanca.items import split_of; "
              "print(json.dumps([split_of(u) for u in json.loads(sys.stdin.read())]))")
    for seed in ("1", "2"):
        other = subprocess.run([sys.executable, "-c", script], input=json.dumps(units), capture_output=True,
                               text=True, check=True, cwd=Path(__file__).resolve().parents[3],
                               env={**os.environ, "PYTHONHASHSEED": seed})
        assert json.loads(other.stdout) == [split_of(u) for u in units]
    splits = [split_of(f"unit-{i}") for i in range(2000)]
    assert 0.07 < splits.count("test") / len(splits) < 0.13
    assert split_of("x", test_share=0.0) == "train" and split_of("x", test_share=1.0) == "test"
