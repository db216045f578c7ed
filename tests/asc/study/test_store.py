"""asc.study.store on SQLite files: balanced assignment, resume, validation, duplicates, concurrency.

The ``study`` and ``store`` fixtures are in tests/asc/study/conftest.py; Table III is tested in test_tables.py.
"""

from __future__ import annotations

import threading
from collections import Counter

import pandas as pd
import pytest
from sqlalchemy import text

from asc.errors import InputError
from asc.study.definition import parse_study
from asc.study.store import StudyStore, default_url, normalize_code
from tests.helpers import BACKGROUND, N_BACKGROUND, N_SAMPLE, STORE_STUDY, store_ratings


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
    assert store.save_ratings(code, "a", store_ratings(0, "a"))
    s = reopened()
    assert (s.answered, s.next_sample, s.finished) == (("a",), "b", False)
    assert store.save_ratings(code, "c", store_ratings(0, "c"))  # out of order is allowed; next is the first unanswered
    assert reopened().next_sample == "b"
    assert store.save_ratings(code, "b", store_ratings(0, "b"))
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
        store.save_ratings(code, "a", store_ratings(0, "a"))
    assert store.save_background(code, {"python": "Novice"})  # the optional question may be left out
    with pytest.raises(InputError, match="The visualization is easy to read"):
        store.save_ratings(code, "a", {"useful": 3, "complex": 3})
    for bad in (0, 6, "abc", 2.5, True, None):
        answers = {"useful": bad, "readable": 3, "complex": 3}
        with pytest.raises(InputError, match="useful" if bad is None else "not on the scale"):
            store.save_ratings(code, "a", answers)
    with pytest.raises(InputError, match="not part of study"):
        store.save_ratings(code, "zz", store_ratings(0, "zz"))
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
    assert store.save_ratings(code, "a", store_ratings(1, "a"))
    assert not store.save_ratings(code, "a", store_ratings(2, "a"))
    assert _count(store) == N_BACKGROUND + N_SAMPLE
    r = store.responses()
    assert r.set_index(["sample_id", "question_id"]).loc[("a", "useful"), "value"] == "2"
    assert r.query("kind == 'background'").set_index("question_id")["value"]["python"] == "Expert"
    assert not r.duplicated(["code", "sample_id", "question_id"]).any()


def test_personal_data_only_when_the_study_asks(tmp_path, store):
    code = store.new_participant()
    store.consent(code)
    with pytest.raises(InputError, match="does not collect personal data"):
        store.save_background(code, BACKGROUND, personal={"email": "a@b.c"})
    asks = parse_study({**STORE_STUDY, "id": "asks", "collect_personal_data": True,
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
                assert s.save_ratings(code, sample, store_ratings(i, sample))
            assert not s.save_ratings(code, "a", store_ratings(i + 1, "a"))  # a double click
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
            expected.update({(sample, q): str(v) for q, v in store_ratings(i, sample).items()})
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
        results.append(store.save_ratings(code, "a", store_ratings(i, "a")))

    threads = [threading.Thread(target=submit, args=(i,)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(results) == [False] * 9 + [True]
    assert _count(store) == N_BACKGROUND + N_SAMPLE
