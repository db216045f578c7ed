"""The access token's cookie (issue 44): its value and checks (asc.access) and the middleware that sets it
(ui.token_cookie), without a server or a browser. The same in chromium: tests/attacks/test_gate_browser.py."""

from __future__ import annotations

import asyncio
import re

import pytest

from asc import access
from asc.access import (
    access_cookie_header,
    access_cookie_matches,
    access_cookie_name,
    access_cookie_value,
)
from ui.token_cookie import TokenCookieMiddleware, install, redirect_target

TOKEN = "tok-" + "x" * 28


@pytest.fixture(autouse=True)
def _fresh_secret(monkeypatch):
    """A fresh cookie secret per test (it lives as long as the process: one server start)."""
    monkeypatch.setattr(access, "_cookie_secret", [])


# ------------------------------------------------------------------------------------------------ value and checks


def test_the_cookie_is_an_hmac_of_the_token_not_the_token():
    value = access_cookie_value(TOKEN)
    assert re.fullmatch(r"[0-9a-f]{64}", value) and TOKEN not in value
    assert access_cookie_value(TOKEN) == value, "one value per token for the life of the server"
    assert access_cookie_matches(value, TOKEN)


def test_a_restart_makes_every_earlier_cookie_worthless(monkeypatch):
    before = access_cookie_value(TOKEN)
    monkeypatch.setattr(access, "_cookie_secret", [])  # another server start: another secret
    assert access_cookie_value(TOKEN) != before and not access_cookie_matches(before, TOKEN)


@pytest.mark.parametrize("forged", [
    "", TOKEN, "0" * 64, "forged", "é" * 64, "\udcff",
    "sha256-of-the-token",  # replaced below by the plain digest: known to whoever knows the token, not the secret
])
def test_forged_cookies_are_refused(forged):
    import hashlib

    if forged == "sha256-of-the-token":
        forged = hashlib.sha256(TOKEN.encode()).hexdigest()
    assert not access_cookie_matches(forged, TOKEN)


def test_a_cookie_opens_only_its_own_token():
    value = access_cookie_value(TOKEN)
    assert not access_cookie_matches(value, TOKEN + "y")
    assert not access_cookie_matches(value, "")
    assert not access_cookie_matches(value[:-1], TOKEN) and not access_cookie_matches(value + "0", TOKEN)


def test_the_cookie_compares_in_constant_time(monkeypatch):
    seen = []
    real = access.hmac.compare_digest
    monkeypatch.setattr(access.hmac, "compare_digest", lambda a, b: seen.append((a, b)) or real(a, b))
    assert access_cookie_matches(access_cookie_value(TOKEN), TOKEN)
    assert seen, "hmac.compare_digest, not =="


def test_the_cookie_header():
    assert access_cookie_name(8501) == access_cookie_name("8501") == "asc-access-8501"
    assert access_cookie_header("asc-access-8501", "v") == "asc-access-8501=v; Path=/; HttpOnly; SameSite=Strict"
    assert access_cookie_header("n", "v", "/studio/", secure=True) == "n=v; Path=/studio; HttpOnly; SameSite=Strict; Secure"
    assert access_cookie_header("n", "v", "lab; Domain=evil") == "n=v; Path=/lab%3B%20Domain%3Devil; HttpOnly; SameSite=Strict"


# ------------------------------------------------------------------------------------------------ the middleware


def _request(path: str = "/", query: str = "", method: str = "GET", kind: str = "http", scheme: str = "http",
             token: str | None = TOKEN, base: str = "") -> tuple[list[dict], list[dict]]:
    """One request through the middleware in front of a stand-in for Streamlit: (what the client got, the requests the
    stand-in saw)."""
    reached: list[dict] = []
    sent: list[dict] = []

    async def streamlit(scope, receive, send):
        reached.append(scope)
        await send({"type": "http.response.start", "status": 200, "headers": []})

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request"}

    middleware = TokenCookieMiddleware(streamlit, token=lambda: token, port=lambda: 8501, base_path=lambda: base)
    scope = {"type": kind, "method": method, "scheme": scheme, "path": path, "raw_path": path.encode(),
             "query_string": query.encode(), "headers": []}
    asyncio.run(middleware(scope, receive, send))
    return sent, reached


def _headers(sent: list[dict]) -> dict[str, str]:
    return {k.decode(): v.decode() for k, v in sent[0]["headers"]}


def test_the_right_token_gets_the_cookie_and_a_redirect_without_it():
    sent, reached = _request("/global-asc-eval", f"token={TOKEN}&model=smollm2-135m")
    assert not reached, "the page is not served with the token in its address"
    assert sent[0]["status"] == 303
    headers = _headers(sent)
    assert headers["location"] == "/global-asc-eval?model=smollm2-135m"
    name, rest = headers["set-cookie"].split("=", 1)
    assert name == "asc-access-8501" and rest.endswith("; Path=/; HttpOnly; SameSite=Strict")
    assert access_cookie_matches(rest.split(";")[0], TOKEN) and TOKEN not in headers["set-cookie"]
    assert headers["cache-control"] == "no-store" and headers["referrer-policy"] == "no-referrer"


@pytest.mark.parametrize("query", ["token=wrong-token-zzzzzzzzzzzzzzzz", "token=", "other=1", "", f"token={TOKEN}x",
                                   f"token={TOKEN}&token=wrong"])
def test_anything_but_the_right_token_goes_on_to_the_page(query):
    """A wrong token reaches the page, whose gate says so and counts the try; the last ``token=`` is the one read."""
    sent, reached = _request("/", query)
    assert len(reached) == 1 and sent[0]["status"] == 200


@pytest.mark.parametrize("kind, method, token", [("websocket", "GET", TOKEN), ("http", "POST", TOKEN),
                                                 ("http", "GET", None)])
def test_other_requests_and_an_app_without_token_pass_through(kind, method, token):
    sent, reached = _request("/", f"token={TOKEN}", method=method, kind=kind, token=token)
    assert len(reached) == 1 and not any("set-cookie" in _headers([m]) for m in sent if "headers" in m)


def test_over_https_the_cookie_is_secure_and_scoped_to_the_base_path():
    sent, _ = _request("/studio/inspector", f"token={TOKEN}", scheme="https", base="studio")
    headers = _headers(sent)
    assert headers["location"] == "/studio/inspector"
    assert headers["set-cookie"].endswith("; Path=/studio; HttpOnly; SameSite=Strict; Secure")


def test_a_bad_asc_token_lets_the_request_through_to_the_gate():
    from asc.errors import InputError

    def short() -> str:
        raise InputError("ASC_TOKEN has 3 characters")

    reached: list[dict] = []

    async def streamlit(scope, receive, send):
        reached.append(scope)

    async def nothing(message=None):
        return {}

    middleware = TokenCookieMiddleware(streamlit, token=short, port=lambda: 8501, base_path=lambda: "")
    asyncio.run(middleware({"type": "http", "method": "GET", "path": "/", "query_string": b"token=abc"}, nothing,
                           nothing))
    assert reached


@pytest.mark.parametrize("raw, pairs, target", [
    ("/", [("token", "t")], "/"),
    ("//evil.example/x", [("token", "t")], "/evil.example/x"),  # never another site
    ("/\\evil.example", [("token", "t")], "/evil.example"),
    ("/%2F%2Fevil", [("token", "t")], "/%2F%2Fevil"),
    ("/inspector", [("a", "1 2"), ("token", "t"), ("b", "é")], "/inspector?a=1%202&b=%C3%A9"),
])
def test_the_redirect_stays_on_this_server(raw, pairs, target):
    assert redirect_target(raw, pairs) == target


def test_install_puts_the_middleware_in_front_of_streamlits_once(monkeypatch):
    from streamlit.web.server.starlette import starlette_app

    monkeypatch.setattr(starlette_app, "create_streamlit_middleware", starlette_app.create_streamlit_middleware)
    assert install(lambda: TOKEN) and install(lambda: TOKEN)
    stack = starlette_app.create_streamlit_middleware()
    assert [m.cls for m in stack].count(TokenCookieMiddleware) == 1 and stack[0].cls is TokenCookieMiddleware
    monkeypatch.delattr(starlette_app, "create_streamlit_middleware")
    assert not install(lambda: TOKEN), "another Streamlit: nothing installed, the launcher warns"
