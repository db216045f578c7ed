"""Password boxes: the study results page (``ASC_STUDY_PASSWORD``) and the optional gate of the whole app
(``ASC_PASSWORD``).

* passwords are compared in constant time (SHA-256 digests, ``hmac.compare_digest``);
* tries are limited: 5 per minute per client (its IP address, else its browser tab) and 30 per minute for
  everybody together, so opening new tabs does not multiply the tries (40 tries in 22 s used to go through);
* a rerun with the same typed value is not a new try, and a correct password opens the page once.
"""

from __future__ import annotations

import threading

import pytest
from streamlit.testing.v1 import AppTest

from tests.pages.helpers import APP, page

ADMIN = page("study_admin")


@pytest.fixture(autouse=True)
def _fresh_limits():
    """The limiters are shared by every session of the process: start and end each test with fresh ones."""
    from ui import access

    access.limiters.clear()
    yield
    access.limiters.clear()


# ------------------------------------------------------------------------------------------------ backend


def test_password_matches_compares_digests_in_constant_time(monkeypatch):
    import asc.access

    calls = []
    real = asc.access.hmac.compare_digest

    def recording(a, b):
        calls.append((len(a), len(b)))
        return real(a, b)

    monkeypatch.setattr(asc.access.hmac, "compare_digest", recording)
    assert asc.access.password_matches("s3cret", "s3cret")
    assert not asc.access.password_matches("s3cre", "s3cret")
    assert not asc.access.password_matches("x" * 1000, "s3cret")
    assert not asc.access.password_matches("", "")  # no password set: nothing matches
    assert asc.access.password_matches("pässwörd ✓", "pässwörd ✓")
    assert calls == [(32, 32)] * 4, "digests of equal length, whatever was typed"


def test_rate_limiter_counts_tries_per_key_within_the_window():
    from asc.access import RateLimiter

    now = [1000.0]
    limiter = RateLimiter(5, 60.0, clock=lambda: now[0])
    assert [limiter.allow("a") for _ in range(6)] == [True] * 5 + [False]
    assert limiter.allow("b")
    assert 59 <= limiter.retry_after("a") <= 60 and limiter.retry_after("b") == 0
    now[0] += 30
    assert not limiter.allow("a")
    now[0] += 30.5
    assert limiter.allow("a") and limiter.retry_after("b") == 0


def test_rate_limiter_is_thread_safe():
    from asc.access import RateLimiter

    limiter = RateLimiter(5, 60.0)
    results: list[bool] = []
    start = threading.Barrier(40)

    def attempt() -> None:
        start.wait()
        results.append(limiter.allow("same client"))

    threads = [threading.Thread(target=attempt) for _ in range(40)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(10)
    assert sorted(results) == [False] * 35 + [True] * 5


# ------------------------------------------------------------------------------------------------ results page


def _admin(monkeypatch, tmp_path) -> AppTest:
    monkeypatch.setenv("ASC_STUDY_PASSWORD", "s3cret")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    at = AppTest.from_file(ADMIN, default_timeout=120)
    at.run()
    return at


def _opened(at) -> bool:
    """Past the password: the page tells whether the study is prepared (or why it cannot be opened)."""
    return bool(at.warning or at.dataframe or any("cannot be opened" in e.value for e in at.error))


def test_the_results_page_allows_five_tries_per_minute(monkeypatch, tmp_path):
    at = _admin(monkeypatch, tmp_path)
    for i in range(5):
        at.text_input(key="study_pw").set_value(f"guess{i}").run()
        assert any("Wrong password" in e.value for e in at.error)
    at.text_input(key="study_pw").set_value("s3cret").run()
    assert not _opened(at)
    assert any("Too many tries" in e.value for e in at.error)
    assert not any("Wrong password" in e.value for e in at.error)


def test_reruns_with_the_same_value_are_one_try(monkeypatch, tmp_path):
    at = _admin(monkeypatch, tmp_path)
    at.text_input(key="study_pw").set_value("guess").run()
    for _ in range(8):
        at.run()
        assert any("Wrong password" in e.value for e in at.error)
    at.text_input(key="study_pw").set_value("s3cret").run()
    assert _opened(at) and not any("Too many" in e.value for e in at.error)
    at.run()
    assert _opened(at)
    assert not [w for w in at.text_input if w.key == "study_pw"], "the box is gone once the password is right"


def test_new_tabs_do_not_multiply_the_tries(monkeypatch, tmp_path):
    from ui import access

    tries = 0
    for _ in range(6):  # six tabs of one client without an IP address, five tries each: 30 in a minute
        at = _admin(monkeypatch, tmp_path)
        for _ in range(access.PER_CLIENT[0]):
            at.text_input(key="study_pw").set_value(f"guess{tries}").run()
            tries += 1
    assert tries == access.OVERALL[0] == 30
    at = _admin(monkeypatch, tmp_path)
    at.text_input(key="study_pw").set_value("s3cret").run()
    assert not _opened(at) and any("Too many tries" in e.value for e in at.error)


def test_the_results_page_compares_with_password_matches(monkeypatch, tmp_path):
    from ui import access

    seen = []
    monkeypatch.setattr(access, "password_matches", lambda given, expected: seen.append(given) or given == expected)
    at = _admin(monkeypatch, tmp_path)
    at.text_input(key="study_pw").set_value("s3cret").run()
    assert seen == ["s3cret"] and _opened(at)


# ------------------------------------------------------------------------------------------------ app password


def test_asc_password_gates_the_whole_app(monkeypatch):
    monkeypatch.setenv("ASC_PASSWORD", "open sesame")
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    assert [w.key for w in at.text_input] == ["app_pw"]
    assert not at.sidebar.selectbox and not any(t.value == "Completion inspector" for t in at.title)
    at.text_input(key="app_pw").set_value("wrong").run()
    assert any("Wrong password" in e.value for e in at.error)
    assert not any(t.value == "Completion inspector" for t in at.title)
    at.text_input(key="app_pw").set_value("open sesame").run()
    assert not at.exception
    assert any(t.value == "Completion inspector" for t in at.title)


def test_the_app_password_is_rate_limited(monkeypatch):
    monkeypatch.setenv("ASC_PASSWORD", "open sesame")
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    for i in range(5):
        at.text_input(key="app_pw").set_value(f"guess{i}").run()
    at.text_input(key="app_pw").set_value("open sesame").run()
    assert any("Too many tries" in e.value for e in at.error)
    assert not any(t.value == "Completion inspector" for t in at.title)


def test_without_asc_password_the_app_opens(monkeypatch):
    monkeypatch.delenv("ASC_PASSWORD", raising=False)
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not [w for w in at.text_input if w.key == "app_pw"]
    assert any(t.value == "Completion inspector" for t in at.title)
