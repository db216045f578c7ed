"""The gate in chromium, on fresh servers, for anonymous visitors of every legacy and current address.

Issue 28, hole 1: from a fresh start, until someone logged in at ``/``, Streamlit's legacy ``pages/`` route
served ``/global_eval`` (and every page file by its name) without ``app.py``'s password gate: the runs were
listed and *Start* wrote a run folder. Hole 2: on loopback every account of the machine was trusted.

The password test and the token test each visit, on a server nobody has got past yet, the legacy addresses first
(so Streamlit is still in its legacy routing), then the current ones; the cookie test then uses the token test's
server (``make app``'s, started once: :func:`local_app`). Every visit is a new page, so a new Streamlit
session (its session state, where the gate remembers a visitor, is per page). The anonymous visits of a batch share
one browser context that never gets past the gate (its cookies are Streamlit's XSRF cookie only, no credential) and
so its HTTP cache: each page compiles Streamlit's scripts from that cache, where a context of its own fetched and
compiled them again (about 1 s of CPU a page, 22 pages a test); the visits after a login each get a new context,
none of the login's. The visitor must see the password (or token) box and nothing of the app.
The legacy addresses load side by side, each in its own page, and are checked once all have started; then the
current ones, the same way; every check waits for its own page's box. Side by side is the harder case for the
legacy ones: the first session's gate ends the legacy routing for the server, and every session whose run started
before that is still routed the legacy way (Streamlit listed the page files in their sidebars until ``ui.gate``
replaced the list in those runs too); one after the other, only the first visit was.

Issue 44: the printed address keeps its browser in with the server's access cookie (``HttpOnly``, ``SameSite=Strict``,
an HMAC of the token, not the token), and once in, no page shows the token box's words (they showed twice).
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.browser import (
    OUT,
    chromium,
    free_port,
    has_chromium,
    idle,
    launcher_command,
    printed_url,
    start_app,
    still,
    stop,
    streamlit_command,
)
from tests.helpers import ROOT
from tests.support.models import MODULE

pytestmark = [pytest.mark.browser, pytest.mark.slow,
              pytest.mark.skipif(not has_chromium(), reason="Debian chromium not installed (make test does)")]

LEGACY = sorted("/" + p.stem for p in (ROOT / "pages").glob("*.py"))  # /attention, ..., /study_admin
CURRENT = ["/", "/home", "/inspector", "/compare-models", "/global-asc-eval", "/causal-effects", "/layer-heatmaps",
           "/attention-maps", "/syntax-features", "/benchmark-tasks", "/text-about-code", "/user-study", "/study-results"]
TOKEN_LEGACY = ["/global_eval", "/study_admin"]  # the token test's sample (its docstring)
TOKEN_CURRENT = ["/", "/global-asc-eval", "/study-results"]
TIMEOUT = 90_000  # ms: a loaded 2-core machine


@pytest.fixture(scope="module")
def _chromium():
    with chromium() as b:
        yield b


@pytest.fixture
def browser(_chromium):
    """One chromium for both tests (started once); each test's contexts are closed when it ends."""
    yield _chromium
    for context in _chromium.contexts:
        context.close()


def _env(tmp_path, **extra: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ASC_")}
    return {**env, "HF_HUB_OFFLINE": "1", "ASC_MODEL": "tiny-random", "ASC_MODEL_MODULES": MODULE,
            "ASC_RUNS_DIR": str(tmp_path / "runs"), **extra}


def _visit(browser, url: str, box: str):
    """A new session in a new context (no cookies) on ``url``: waits for the ``box`` input (the gate), then for the
    script to finish."""
    page = _start(browser.new_context(), url)
    _gated(page, box)
    return page


def _start(context, url: str):
    """A new session (a new page of ``context``) on ``url``, not yet loaded."""
    page = still(context.new_page())
    page.set_default_timeout(TIMEOUT)
    page.goto(url, wait_until="commit", timeout=TIMEOUT)
    return page


def _gated(page, box: str) -> None:
    from playwright.sync_api import expect

    expect(page.get_by_label(box, exact=True)).to_be_visible(timeout=TIMEOUT)
    idle(page, TIMEOUT)


def _every_address_is_gated(browser, port: int, box: str, check=None, batches=(LEGACY, CURRENT)) -> None:
    """Visits of every legacy address, then of every current one (each of ``batches`` side by side): each shows only
    the ``box`` (and passes ``check(page)``)."""
    for batch in batches:
        anonymous = browser.new_context()  # never past the gate: no credential in it (module docstring)
        pages = {path: _start(anonymous, f"http://127.0.0.1:{port}{path}") for path in batch}
        for path, page in pages.items():
            _gated(page, box)
            _shows_nothing_of_the_app(page, path)
            if check:
                check(page)
            page.close()  # checked: it stops drawing while the others are checked
        anonymous.close()


def _shows_nothing_of_the_app(page, url: str) -> None:
    from playwright.sync_api import expect

    expect(page.locator("h1"), url).to_have_count(0)
    expect(page.locator("[data-testid='stButton']"), url).to_have_count(0)  # no Start, no Explain
    expect(page.locator("[data-testid='stSidebarNav']"), url).to_have_count(0)  # not even the pages' names
    expect(page.locator("[data-testid='stException']"), url).to_have_count(0)


def test_every_address_of_a_fresh_password_server_asks_for_the_password(browser, tmp_path):
    """The issue's reproduction: ``ASC_SHARED=1 ASC_PASSWORD=pw streamlit run app.py`` on 127.0.0.1."""
    port = free_port()
    proc = start_app(streamlit_command(port), _env(tmp_path, ASC_SHARED="1", ASC_PASSWORD="pw",
                                                   ASC_STUDY_PASSWORD="researcher"), "gate-password.log", port)
    try:
        _every_address_is_gated(browser, port, "Password")
        page = _visit(browser, f"http://127.0.0.1:{port}/", "Password")
        page.get_by_label("Password", exact=True).fill("pw")
        page.keyboard.press("Enter")
        from playwright.sync_api import expect

        expect(page.locator("h1", has_text="Completion inspector")).to_be_visible(timeout=TIMEOUT)
        page.screenshot(path=str(OUT / "gate-password-open.png"))
        for path in ("/global_eval", "/global-asc-eval"):  # after a login: still asked, in a new session
            other = _visit(browser, f"http://127.0.0.1:{port}{path}", "Password")
            _shows_nothing_of_the_app(other, path)
    finally:
        stop(proc)
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir()), "nothing ran"


@pytest.fixture(scope="module")
def local_app(tmp_path_factory):
    """``make app``'s server (the launcher, a token of its own), started once for the token and the cookie tests:
    (port, the address it printed). The token test visits the legacy addresses first, while nobody is in; the
    cookie test, after it, visits none of them."""
    port = free_port()
    proc = start_app(launcher_command(port), _env(tmp_path_factory.mktemp("gate-local")), "gate-token.log", port)
    try:
        yield port, printed_url(OUT / "gate-token.log")
    finally:
        stop(proc)


def test_a_local_app_asks_every_visitor_for_the_token_make_app_prints(browser, local_app):
    """``make app``: the launcher makes a random token, passes it in the environment (not in ``ps``), prints
    the address with it; the addresses ask a visitor without it for the token.

    The same gate (``ui.gate``) guards every page for both credentials, and the password test visits all 24
    addresses; here the token's wiring is checked on a fresh server's legacy addresses of the issue's reproduction
    and of the study's admin page (visited first, while Streamlit still routes the legacy way), then on three current
    ones (the inspector, the page that starts runs, the study results): 5 visits in place of 24 (with all 24 the
    test took 26-31 s)."""
    from playwright.sync_api import expect

    assert set(TOKEN_LEGACY) <= set(LEGACY) and set(TOKEN_CURRENT) <= set(CURRENT)  # addresses that exist
    port, url = local_app
    token = url.split("?token=", 1)[1]
    assert url.startswith(f"http://127.0.0.1:{port}/?token=") and len(token) >= 32
    processes = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True).stdout
    assert token not in processes, "the token is never on a command line"
    _every_address_is_gated(browser, port, "Access token",
                            lambda page: expect(page.get_by_text("Trust remote code")).to_have_count(0),
                            batches=(TOKEN_LEGACY, TOKEN_CURRENT))
    page = still(browser.new_context().new_page())
    page.goto(url)
    expect(page.locator("h1", has_text="Completion inspector")).to_be_visible(timeout=TIMEOUT)
    expect(page.get_by_text("Trust remote code")).to_be_visible(timeout=TIMEOUT)  # local mode's privileges
    page.screenshot(path=str(OUT / "gate-token-open.png"))
    wrong = still(browser.new_context().new_page())
    wrong.goto(f"http://127.0.0.1:{port}/global_eval?token=not-the-token")
    expect(wrong.get_by_text("Wrong access token")).to_be_visible(timeout=TIMEOUT)
    _shows_nothing_of_the_app(wrong, "/global_eval?token=wrong")


BANNER = "This AsC Studio asks for its access token"


def _banners(page):
    return page.locator("[data-testid='stAlert']").filter(has_text=BANNER)


def _is_in(page, title: str) -> None:
    """``page`` shows the app's page ``title`` (waited for), without the token box or its words."""
    from playwright.sync_api import expect

    expect(page.locator("h1", has_text=title)).to_be_visible(timeout=TIMEOUT)
    idle(page, TIMEOUT)
    expect(_banners(page)).to_have_count(0)
    expect(page.get_by_label("Access token", exact=True)).to_have_count(0)


def test_the_printed_address_keeps_the_browser_in_with_an_httponly_cookie(browser, local_app):
    """Issue 44: past the token, pages showed the token box's words twice, and a reload or a new tab without
    ``?token=`` asked again. Now the printed address sets the access cookie and leads to the page without the token;
    the browser's later sessions are in, a browser without the cookie (or with a forged one) is not."""
    from playwright.sync_api import expect

    port, url = local_app
    base = f"http://127.0.0.1:{port}"
    token = url.split("?token=", 1)[1]
    before = _visit(browser, f"{base}/compare-models", "Access token")  # (b) one line of words and the box
    expect(_banners(before)).to_have_count(1)
    _shows_nothing_of_the_app(before, "/compare-models")
    before.screenshot(path=str(OUT / "gate-cookie-box.png"))
    before.context.close()

    context = browser.new_context()
    page = still(context.new_page())
    page.set_default_timeout(TIMEOUT)
    page.goto(url)  # (a) the printed address: in, on two pages, without the token's words
    _is_in(page, "Completion inspector")
    assert "token=" not in page.url, "the token left the address"
    page.screenshot(path=str(OUT / "gate-cookie-inspector.png"))
    page.locator("[data-testid='stSidebarNav'] a", has_text="Compare models").click()  # a link
    _is_in(page, "Compare models on one snippet")
    page.screenshot(path=str(OUT / "gate-cookie-compare.png"))

    cookies = [c for c in context.cookies() if c["name"] == f"asc-access-{port}"]  # (e)
    assert len(cookies) == 1, context.cookies()
    cookie = cookies[0]
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict" and cookie["path"] == "/"
    assert cookie["expires"] == -1, "a session cookie"
    assert token not in cookie["value"], "not the token"

    page.reload()  # (c) a reload without ?token=, and a new tab of the same browser
    _is_in(page, "Compare models on one snippet")
    tab = _start(context, f"{base}/global-asc-eval")
    _is_in(tab, "Global AsC-Eval")
    assert f"asc-access-{port}" not in tab.evaluate("document.cookie"), "page scripts cannot read it"
    tab.screenshot(path=str(OUT / "gate-cookie-new-tab.png"))
    context.close()

    fresh = _visit(browser, f"{base}/global-asc-eval", "Access token")  # (d) another browser: no cookie
    _shows_nothing_of_the_app(fresh, "/global-asc-eval without the cookie")
    fresh.context.close()
    for forged in (token, cookie["value"][::-1]):  # (f) the raw token as the cookie, a value never made
        forger = browser.new_context()
        forger.add_cookies([{**cookie, "value": forged}])
        page = _start(forger, f"{base}/global-asc-eval")
        _gated(page, "Access token")
        _shows_nothing_of_the_app(page, "/global-asc-eval with a forged cookie")
        expect(_banners(page)).to_have_count(1)
        page.screenshot(path=str(OUT / "gate-cookie-forged.png"))
        forger.close()
