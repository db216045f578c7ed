"""The gate every route passes first (ui.gate): the app password, the access token, the study's pages.

Issue 28, holes 1 and 2:

1. Streamlit's legacy ``pages/`` route served ``/global_eval`` (a page file by its name) without ``app.py``
   and so without its password gate, until somebody logged in. Every page now calls ``gate.enter()`` as its
   first statement; AppTest running a page file on its own is exactly what the legacy route does.
2. Local mode trusted every account of the machine (loopback). A local app now asks for an access token,
   made at random per start unless ``ASC_TOKEN`` sets one; ``ASC_TOKEN=off`` is the one way to switch it off.

The same in a real browser, on fresh servers, for every legacy and current address: test_gate_browser.py.
"""

from __future__ import annotations

import ast

import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers import ROOT
from tests.pages.helpers import APP, page

PAGES = sorted(p.stem for p in (ROOT / "pages").glob("*.py"))
STUDY_PAGES = {"study", "study_admin"}
TITLES = {"attention": "Attention maps", "blanca": "Text about code (BLANCA)", "causal": "Causal effects",
          "compare": "Compare models on one snippet", "global_eval": "Global AsC-Eval", "gluecode": "Benchmark tasks (glueCode)",
          "inspect": "Completion inspector", "probing": "Layer heatmaps", "sae": "Syntax features", "study": None,  # the study's own title
          "study_admin": "Study results"}


@pytest.fixture(autouse=True)
def _fresh(monkeypatch):
    """Fresh limiters and no token made by an earlier test (both live as long as the process)."""
    import asc.access
    from ui import access

    access.limiters.clear()
    monkeypatch.setattr(asc.access, "_made_token", [])
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.delenv("ASC_PASSWORD", raising=False)
    yield
    access.limiters.clear()


def _first_statement(path) -> ast.stmt:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    body = [n for n in tree.body if not isinstance(n, (ast.Import, ast.ImportFrom))]
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]  # the docstring
    return body[0]


def _is_gate_call(node: ast.stmt) -> bool:
    return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
            and ast.unparse(node.value.func) == "gate.enter")


def test_all_pages_are_known():
    assert set(PAGES) == set(TITLES), "a new page: add its title here, so the gate tests cover it"


@pytest.mark.parametrize("name", PAGES)
def test_every_page_calls_the_gate_before_anything_else(name):
    first = _first_statement(ROOT / "pages" / f"{name}.py")
    assert _is_gate_call(first), f"pages/{name}.py must start with gate.enter() (after its imports)"
    study = any(k.arg == "study" for k in first.value.keywords)  # type: ignore[attr-defined]
    assert study == (name in STUDY_PAGES), "only the study pages may open in study mode"


def test_the_router_calls_the_gate_before_the_sidebar_and_navigation():
    tree = ast.parse((ROOT / "app.py").read_text(encoding="utf-8"))
    calls = [ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    gate = calls.index("gate.enter")
    assert gate < calls.index("widgets.sidebar") and gate < calls.index("st.navigation")


# ------------------------------------------------------------------------------------------------ tokens


def test_a_local_server_makes_one_random_token_and_keeps_it(monkeypatch):
    from asc.access import AccessPolicy, server_token

    monkeypatch.delenv("ASC_TOKEN", raising=False)
    announced: list[str] = []
    first = server_token(announced.append)
    assert first and len(first) >= 32 and server_token(announced.append) == first
    assert announced == [first], "printed once, when made"
    assert AccessPolicy.from_environment("127.0.0.1", False).token == first
    monkeypatch.setattr("asc.access._made_token", [])
    assert server_token() != first, "another start, another token"


def test_asc_token_sets_the_token_and_off_switches_it_off(monkeypatch):
    from asc.access import AccessPolicy

    monkeypatch.setenv("ASC_TOKEN", "my own long token")
    assert AccessPolicy.from_environment("127.0.0.1", False).token == "my own long token"
    assert AccessPolicy.from_environment("0.0.0.0", False).token == "my own long token"  # an admin's choice
    for off in ("off", "OFF", " off "):
        monkeypatch.setenv("ASC_TOKEN", off)
        assert AccessPolicy.from_environment("127.0.0.1", False).token is None


def test_a_shared_server_asks_no_token_unless_the_admin_sets_one(monkeypatch):
    from asc.access import AccessPolicy

    monkeypatch.delenv("ASC_TOKEN", raising=False)
    monkeypatch.delenv("ASC_SHARED", raising=False)
    assert AccessPolicy.from_environment("0.0.0.0", False).token is None
    assert AccessPolicy.from_environment("127.0.0.1", True).token is None  # study mode is shared
    monkeypatch.setenv("ASC_SHARED", "0")  # local mode on a network address: the token matters even more
    assert AccessPolicy.from_environment("0.0.0.0", False).token is not None


def _token_app(monkeypatch, target: str = APP) -> AppTest:
    monkeypatch.setenv("ASC_TOKEN", "tok-" + "x" * 28)
    return AppTest.from_file(target, default_timeout=120)


def _titles(at) -> list[str]:
    return [t.value for t in at.title]


def test_without_the_token_a_local_app_shows_only_the_token_box(monkeypatch):
    at = _token_app(monkeypatch)
    at.run()
    assert not at.exception
    assert [w.key for w in at.text_input] == ["app_token"] and not _titles(at)
    assert not at.sidebar.selectbox, "no model choice, no 'Trust remote code' before the token"
    assert any("?token=" in i.value for i in at.info)


def test_the_token_in_the_address_opens_the_app(monkeypatch):
    at = _token_app(monkeypatch)
    at.query_params["token"] = "tok-" + "x" * 28
    at.run()
    assert not at.exception
    assert "Completion inspector" in _titles(at) and at.sidebar.selectbox


def test_a_wrong_token_in_the_address_is_refused(monkeypatch):
    at = _token_app(monkeypatch)
    at.query_params["token"] = "tok-" + "y" * 28
    at.run()
    assert any("Wrong access token" in e.value for e in at.error) and not _titles(at)


def test_the_token_box_takes_the_token_and_limits_tries(monkeypatch):
    at = _token_app(monkeypatch)
    at.run()
    at.text_input(key="app_token").set_value("guess").run()
    assert any("Wrong access token" in e.value for e in at.error) and not _titles(at)
    at.text_input(key="app_token").set_value("tok-" + "x" * 28).run()
    assert "Completion inspector" in _titles(at)
    other = _token_app(monkeypatch)  # another tab: five wrong tries, then the sixth is not even compared
    other.run()
    for i in range(6):
        other.text_input(key="app_token").set_value(f"guess{i}").run()
    assert any("Too many tries" in e.value for e in other.error) and not _titles(other)
    other.text_input(key="app_token").set_value("tok-" + "x" * 28).run()
    assert "Completion inspector" in _titles(other), "the right token always opens (only wrong ones count)"


def test_wrong_tries_of_others_never_lock_the_owner_out(monkeypatch):
    """On loopback Streamlit knows no client address, so the overall cap (30 a minute) is shared by every account:
    the right token is compared first and never counted, so neither an attacker's wrong tries nor the owner's own
    reloads (each a new session) keep the owner out."""
    for i in range(31):  # another account's wrong tokens, each in a new session, up to the overall cap
        at = _token_app(monkeypatch)
        at.query_params["token"] = f"wrong-{i}"
        at.run()
    assert any("Too many tries" in e.value for e in at.error)
    for _ in range(3):  # the owner's reloads of the printed address
        owner = _token_app(monkeypatch)
        owner.query_params["token"] = "tok-" + "x" * 28
        owner.run()
        assert "Completion inspector" in _titles(owner)


def test_a_short_asc_token_is_refused_with_the_fix(monkeypatch):
    from asc.access import MIN_TOKEN_CHARS, AccessPolicy
    from asc.errors import InputError

    monkeypatch.setenv("ASC_TOKEN", "x" * (MIN_TOKEN_CHARS - 1))
    with pytest.raises(InputError, match="at least 16"):
        AccessPolicy.from_environment("127.0.0.1", False)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception and any("ASC_TOKEN has 15 characters" in e.value for e in at.error)
    assert not _titles(at) and not at.text_input


def test_plain_streamlit_run_prints_the_address_with_the_token_it_made(monkeypatch, capsys):
    """Without make app's launcher the server makes the token itself on the first visit: it must say so."""
    monkeypatch.delenv("ASC_TOKEN", raising=False)
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    from asc.access import server_token

    printed = capsys.readouterr().err
    assert f"?token={server_token()}" in printed and printed.count("?token=") == 1


def test_a_restart_with_another_token_asks_again(monkeypatch):
    at = _token_app(monkeypatch)
    at.query_params["token"] = "tok-" + "x" * 28
    at.run()
    assert "Completion inspector" in _titles(at)
    monkeypatch.setenv("ASC_TOKEN", "a-new-token-after-a-restart-zzzz")
    at.query_params.clear()
    at.run()
    assert not _titles(at) and [w.key for w in at.text_input] == ["app_token"]


BANNER = "This AsC Studio asks for its access token"


def _banners(at) -> int:
    return sum(BANNER in i.value for i in at.info)


def test_the_token_banner_shows_once_before_and_never_after(monkeypatch):
    """Issue 44, 1: past the token, a page without ``?token=`` in its address (every page reached by a link) showed
    the banner twice, once from the router's gate and once from the page's."""
    at = _token_app(monkeypatch)
    at.run()
    assert _banners(at) == 1 and [w.key for w in at.text_input] == ["app_token"]
    at.query_params["token"] = "tok-" + "x" * 28
    at.run()
    at.query_params.clear()  # a link to another page, or the router's own page switch
    at.run()
    assert "Completion inspector" in _titles(at) and _banners(at) == 0 and not at.text_input


def _browser_cookies(monkeypatch, cookies: dict[str, str]) -> None:
    """The cookies a browser sent with its session's connection (AppTest has no browser)."""
    from types import SimpleNamespace

    import streamlit.runtime.context as context

    client = SimpleNamespace(cookies=cookies, headers=[], remote_ip=None)
    monkeypatch.setattr(context, "_get_client_context", lambda: client)


def test_the_servers_access_cookie_opens_the_token_gate(monkeypatch):
    """Issue 44, 2: the cookie ui.token_cookie sets for the printed address lets a new session of that browser in."""
    from asc.access import access_cookie_name, access_cookie_value

    monkeypatch.setattr("asc.access._cookie_secret", [])
    _browser_cookies(monkeypatch, {access_cookie_name(8501): access_cookie_value("tok-" + "x" * 28)})
    at = _token_app(monkeypatch)
    at.run()
    assert not at.exception and "Completion inspector" in _titles(at) and _banners(at) == 0


@pytest.mark.parametrize("forged", ["tok-" + "x" * 28, "0" * 64, "another-server-start"])
def test_a_forged_or_stale_cookie_opens_nothing(monkeypatch, forged):
    from asc.access import access_cookie_name, access_cookie_value

    monkeypatch.setattr("asc.access._cookie_secret", [])
    if forged == "another-server-start":
        forged = access_cookie_value("tok-" + "x" * 28)
        monkeypatch.setattr("asc.access._cookie_secret", [])
    _browser_cookies(monkeypatch, {access_cookie_name(8501): forged, access_cookie_name(8502): forged})
    at = _token_app(monkeypatch)
    at.run()
    assert not _titles(at) and [w.key for w in at.text_input] == ["app_token"] and _banners(at) == 1


def test_the_cookie_stands_for_the_token_not_the_password(monkeypatch):
    from asc.access import access_cookie_name, access_cookie_value

    monkeypatch.setattr("asc.access._cookie_secret", [])
    monkeypatch.setenv("ASC_PASSWORD", "open sesame")
    _browser_cookies(monkeypatch, {access_cookie_name(8501): access_cookie_value("tok-" + "x" * 28)})
    at = _token_app(monkeypatch)
    at.run()
    assert [w.key for w in at.text_input] == ["app_pw"] and not _titles(at)
    at.text_input(key="app_pw").set_value("open sesame").run()
    assert "Completion inspector" in _titles(at) and not at.text_input


# ------------------------------------------------------------------------------------------------ pages alone


@pytest.mark.parametrize("name", PAGES)
def test_a_page_run_without_the_router_asks_for_the_password(monkeypatch, name):
    """What the legacy route did: the page file on its own, on a password-protected shared server."""
    monkeypatch.setenv("ASC_SHARED", "1")
    monkeypatch.setenv("ASC_PASSWORD", "open sesame")
    monkeypatch.setenv("ASC_STUDY_PASSWORD", "researcher")
    at = AppTest.from_file(page(name), default_timeout=120)
    at.run()
    assert not at.exception
    assert [w.key for w in at.text_input] == ["app_pw"], "the password box and nothing else"
    assert not _titles(at) and not at.button and not at.selectbox and not at.dataframe
    at.text_input(key="app_pw").set_value("open sesame").run()
    assert not at.exception and "app_pw" not in [w.key for w in at.text_input]
    assert TITLES[name] in _titles(at) if TITLES[name] else True, "the right password opens the page"


@pytest.mark.parametrize("name", PAGES)
def test_a_page_run_without_the_router_asks_for_the_token(monkeypatch, name):
    at = _token_app(monkeypatch, page(name))
    at.run()
    assert not at.exception
    assert [w.key for w in at.text_input] == ["app_token"] and not _titles(at) and not at.button


@pytest.mark.parametrize("name", sorted(set(PAGES) - STUDY_PAGES))
def test_a_study_server_runs_no_other_page(monkeypatch, name):
    monkeypatch.setenv("ASC_STUDY_MODE", "1")
    at = AppTest.from_file(page(name), default_timeout=120)
    at.run()
    assert not at.exception and not _titles(at) and not at.button
    assert any("user study" in i.value for i in at.info)
