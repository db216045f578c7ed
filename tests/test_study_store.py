"""asc.study.store on SQLite files: balanced assignment, resume, validation, duplicates, Table III, concurrency."""

from __future__ import annotations

import threading
from collections import Counter

import pandas as pd
import pytest
from sqlalchemy import text

from asc.errors import InputError
from asc.study.definition import parse_study
from asc.study.store import StudyStore, default_url, normalize_code
from asc.study.tables import AGREEMENT_LEVELS, agreement_table

STUDY = {
    "id": "store-test", "title": "Store test", "model": "tiny-random", "consent": "I agree.",
    "groups": [{"id": "C", "view": "none"}, {"id": "S1", "view": "sequence"},
               {"id": "S2", "view": "partial"}, {"id": "S3", "view": "complete"}],
    "background": [{"id": "python", "text": "How proficient are you in Python?", "choices": ["Novice", "Expert"]},
                   {"id": "problems", "text": "Problems with code LLMs?", "required": False}],
    "ratings": [{"id": "useful", "text": "The visualization is useful."},
                {"id": "readable", "text": "The visualization is easy to read."},
                {"id": "complex", "text": "The visualization is complex."}],
    "comment": {"id": "comment", "text": "Comments?"},
    "samples": [{"id": "a", "prompt": "def a():\n"}, {"id": "b", "prompt": "def b():\n"},
                {"id": "c", "prompt": "def c():\n"}],
}
BACKGROUND = {"python": "Expert", "problems": ""}
N_BACKGROUND, N_SAMPLE = 2, 4  # rows per page: every question, blank optional ones as NULL


@pytest.fixture()
def study():
    return parse_study(STUDY, "store-test.yaml")


@pytest.fixture()
def store(tmp_path, study):
    s = StudyStore(default_url(tmp_path), study)
    yield s
    s.close()


def _ratings(i: int, sample: str) -> dict:
    return {"useful": i % 5 + 1, "readable": (i + 1) % 5 + 1, "complex": (i + 2) % 5 + 1, "comment": f"p{i}-{sample}"}


def _count(store, sql="SELECT count(*) FROM answers"):
    with store.engine.connect() as conn:
        return conn.execute(text(sql)).scalar()


def test_sqlite_file_in_wal_mode(store, tmp_path):
    assert store.url == default_url(tmp_path) and store.url.endswith("study.sqlite")
    assert _count(store, "PRAGMA journal_mode") == "wal"


def test_default_location_and_in_memory(tmp_path, monkeypatch, study):
    monkeypatch.delenv("ASC_STUDY_DB", raising=False)
    monkeypatch.setenv("ASC_STUDY_DIR", str(tmp_path / "studies"))
    s = StudyStore(None, study)
    try:
        assert s.url == default_url(tmp_path / "studies") and (tmp_path / "studies" / "study.sqlite").exists()
    finally:
        s.close()
    memory = StudyStore("sqlite://", study)
    code = memory.new_participant()
    assert memory.consent(code) and memory.state(code).step == "background"
    memory.close()


def test_sequential_assignment_is_balanced(store):
    codes = [store.new_participant() for _ in range(40)]
    assert len(set(codes)) == 40 and all(len(c) == 8 and c == normalize_code(c) for c in codes)
    assert Counter(store.state(c).group_id for c in codes) == {"C": 10, "S1": 10, "S2": 10, "S3": 10}
    assert store.progress()["assigned"].tolist() == [10, 10, 10, 10]


def test_resume_after_each_step(store, study, tmp_path):
    code = store.new_participant()

    def reopened():  # a reload or a server restart: a fresh store on the same file, the code typed in
        other = StudyStore(default_url(tmp_path), study)
        try:
            return other.state(f" {code[:4].lower()}-{code[4:]} ")
        finally:
            other.close()

    s = reopened()
    assert (s.step, s.consented, s.background_done, s.answered, s.next_sample) == ("consent", False, False, (), "a")
    assert s.view == {"C": "none", "S1": "sequence", "S2": "partial", "S3": "complete"}[s.group_id]
    assert store.consent(code) and not store.consent(code)
    assert reopened().step == "background"
    assert store.save_background(code, BACKGROUND)
    s = reopened()
    assert (s.step, s.next_sample) == ("sample", "a")
    assert store.save_ratings(code, "a", _ratings(0, "a"))
    s = reopened()
    assert (s.answered, s.next_sample, s.finished) == (("a",), "b", False)
    assert store.save_ratings(code, "c", _ratings(0, "c"))  # out of order is allowed; next is the first unanswered
    assert reopened().next_sample == "b"
    assert store.save_ratings(code, "b", _ratings(0, "b"))
    s = reopened()
    assert (s.step, s.answered, s.next_sample, s.finished) == ("done", ("a", "b", "c"), None, True)
    assert not store.finish(code)  # finished automatically with the last sample
    assert store.state("NOPE2345") is None
    progress = store.progress().set_index("group")
    assert progress.loc[s.group_id, ["assigned", "consented", "finished"]].tolist() == [1, 1, 1]


def test_missing_and_invalid_answers_are_refused(store):
    code = store.new_participant()
    with pytest.raises(InputError, match="consent first"):
        store.save_background(code, BACKGROUND)
    store.consent(code)
    with pytest.raises(InputError, match="How proficient are you in Python"):
        store.save_background(code, {"problems": "none"})
    with pytest.raises(InputError, match="is not one of the choices"):
        store.save_background(code, {"python": "Guru"})
    with pytest.raises(InputError, match="unknown background question 'pyton'"):
        store.save_background(code, {"pyton": "Expert"})
    with pytest.raises(InputError, match="background questions first"):
        store.save_ratings(code, "a", _ratings(0, "a"))
    assert store.save_background(code, {"python": "Novice"})  # the optional question may be left out
    with pytest.raises(InputError, match="The visualization is easy to read"):
        store.save_ratings(code, "a", {"useful": 3, "complex": 3})
    for bad in (0, 6, "abc", 2.5, True, None):
        answers = {"useful": bad, "readable": 3, "complex": 3}
        with pytest.raises(InputError, match="useful" if bad is None else "not on the scale"):
            store.save_ratings(code, "a", answers)
    with pytest.raises(InputError, match="not part of study"):
        store.save_ratings(code, "zz", _ratings(0, "zz"))
    with pytest.raises(InputError, match="unknown participant code"):
        store.consent("ABCDEFGH")
    with pytest.raises(InputError, match="not finished"):
        store.finish(code)
    assert _count(store) == N_BACKGROUND  # nothing of a refused page was stored
    assert store.save_ratings(code, "a", {"useful": "Strongly agree", "readable": "2", "complex": 3.0})
    got = store.responses().query("sample_id == 'a'").set_index("question_id")["value"]
    assert got.dropna().to_dict() == {"useful": "5", "readable": "2", "complex": "3"} and pd.isna(got["comment"])


def test_resubmission_keeps_the_first_answers(store):
    code = store.new_participant()
    store.consent(code)
    assert store.save_background(code, BACKGROUND)
    assert not store.save_background(code, {"python": "Novice"})
    assert store.save_ratings(code, "a", _ratings(1, "a"))
    assert not store.save_ratings(code, "a", _ratings(2, "a"))
    assert _count(store) == N_BACKGROUND + N_SAMPLE
    r = store.responses()
    assert r.set_index(["sample_id", "question_id"]).loc[("a", "useful"), "value"] == "2"
    assert r.query("kind == 'background'").set_index("question_id")["value"]["python"] == "Expert"
    assert not r.duplicated(["code", "sample_id", "question_id"]).any()


def test_agreement_table_on_hand_made_answers(study):
    rows = []
    for value, code in zip([5, 4, 4, 1], "wxyz", strict=True):  # group C: 25% SA, 50% A, 25% SD
        rows.append((code, "C", "rating", "a", "useful", str(value)))
    for value, code in zip([3, 2], "uv", strict=True):  # group S2: 50% N, 50% D
        rows.append((code, "S2", "rating", "b", "useful", str(value)))
    rows.append(("u", "S2", "rating", "b", "complex", None))  # left blank: not counted
    rows.append(("u", "S2", "comment", "b", "comment", "5"))  # not a rating
    rows.append(("u", "S2", "background", None, "python", "Expert"))
    responses = pd.DataFrame(rows, columns=["code", "group", "kind", "sample_id", "question_id", "value"])
    table = agreement_table(responses, study).set_index(["group", "question"])
    assert list(table.columns) == ["group_name", "question_text", "n", *AGREEMENT_LEVELS]
    assert AGREEMENT_LEVELS == ("Strongly agree", "Agree", "Neutral", "Disagree", "Strongly disagree")
    assert table.loc[("C", "useful"), ["n", *AGREEMENT_LEVELS]].tolist() == [4, 25.0, 50.0, 0.0, 0.0, 25.0]
    assert table.loc[("S2", "useful"), ["n", *AGREEMENT_LEVELS]].tolist() == [2, 0.0, 0.0, 50.0, 50.0, 0.0]
    assert table.loc[("S2", "complex"), "n"] == 0 and table.loc[("S2", "complex"), list(AGREEMENT_LEVELS)].isna().all()
    assert len(table) == 4 * 3  # every group and question, in study order
    filled = table[table["n"] > 0]
    assert (filled[list(AGREEMENT_LEVELS)].sum(axis=1) - 100).abs().max() < 1e-9


def test_agreement_table_from_the_store_and_csv_export(store, study, tmp_path):
    for i in range(8):
        code = store.new_participant()
        store.consent(code)
        store.save_background(code, BACKGROUND)
        for s in ("a", "b", "c"):
            store.save_ratings(code, s, _ratings(i, s))
    table = agreement_table(store.responses(), study)
    assert table["n"].tolist() == [6] * 12  # 2 participants x 3 samples per group and question
    assert (table[list(AGREEMENT_LEVELS)].sum(axis=1) - 100).abs().max() < 1e-9
    counts = store.progress()[["assigned", "consented", "background_done", "finished"]]
    assert counts.to_numpy().tolist() == [[2] * 4] * 4
    out = store.export_csv(tmp_path / "responses.csv")
    back = pd.read_csv(out)
    assert len(back) == 8 * (N_BACKGROUND + 3 * N_SAMPLE)
    assert list(back.columns) == ["code", "group", "kind", "sample_id", "question_id", "value", "submitted_at"]
    assert "personal" not in store.participants().columns and len(store.participants()) == 8


def test_personal_data_only_when_the_study_asks(tmp_path, store):
    code = store.new_participant()
    store.consent(code)
    with pytest.raises(InputError, match="does not collect personal data"):
        store.save_background(code, BACKGROUND, personal={"email": "a@b.c"})
    asks = parse_study({**STUDY, "id": "asks", "collect_personal_data": True,
                        "personal_fields": [{"id": "email", "text": "E-mail for the raffle"}]}, "asks.yaml")
    other = StudyStore(default_url(tmp_path / "asks"), asks)
    try:
        code = other.new_participant()
        other.consent(code)
        assert other.save_background(code, BACKGROUND, personal={"email": "a@b.c"})
        assert other.participants()["personal"].tolist() == [{"email": "a@b.c"}]
    finally:
        other.close()


@pytest.mark.parametrize("shared", [True, False], ids=["shared-store", "store-per-participant"])
def test_concurrent_participants_store_every_answer_once(tmp_path, study, shared):
    n = 24
    url = default_url(tmp_path)
    common = StudyStore(url, study) if shared else None  # else the stores race to create the tables
    barrier = threading.Barrier(n)
    codes: dict[int, str] = {}
    errors: list[BaseException] = []

    def participant(i: int):
        try:
            barrier.wait()
            s = common if shared else StudyStore(url, study)
            code = s.new_participant()
            codes[i] = code
            s.consent(code)
            s.save_background(code, {"python": ["Novice", "Expert"][i % 2], "problems": f"text {i}"})
            for sample in ("a", "b", "c"):
                assert s.save_ratings(code, sample, _ratings(i, sample))
            assert not s.save_ratings(code, "a", _ratings(i + 1, "a"))  # a double click
            if not shared:
                s.close()
        except BaseException as err:  # noqa: BLE001 - reported below
            errors.append(err)

    threads = [threading.Thread(target=participant, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    common = common or StudyStore(url, study)
    r = common.responses()
    assert len(r) == n * (N_BACKGROUND + 3 * N_SAMPLE) == _count(common)
    assert not r.duplicated(["code", "sample_id", "question_id"]).any()
    for i, code in codes.items():
        mine = r[r["code"] == code]
        expected = {("", "python"): ["Novice", "Expert"][i % 2], ("", "problems"): f"text {i}"}
        for sample in ("a", "b", "c"):
            expected.update({(sample, q): str(v) for q, v in _ratings(i, sample).items()})
        stored = zip(mine["sample_id"], mine["question_id"], mine["value"], strict=True)
        assert {(s if isinstance(s, str) else "", q): v for s, q, v in stored} == expected
    sizes = Counter(common.state(c).group_id for c in codes.values())
    assert len(codes) == n and sum(sizes.values()) == n and max(sizes.values()) - min(sizes.values()) <= 1
    assert common.progress()["finished"].sum() == n
    common.close()


def test_simultaneous_submissions_of_one_page_store_it_once(store):
    code = store.new_participant()
    store.consent(code)
    store.save_background(code, BACKGROUND)
    barrier = threading.Barrier(10)
    results: list[bool] = []

    def submit(i: int):
        barrier.wait()
        results.append(store.save_ratings(code, "a", _ratings(i, "a")))

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(results) == [False] * 9 + [True]
    assert _count(store) == N_BACKGROUND + N_SAMPLE
