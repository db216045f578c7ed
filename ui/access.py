"""The Streamlit side of :mod:`asc.access`: this server's policy, the browser tab's token, the password box.

* :func:`policy`: shared or local mode from ``server.address`` and study mode (see :mod:`asc.access`);
* :func:`protect_files`: a shared server writes its files ``0600`` and folders ``0700`` (:mod:`asc.atomic`);
* :func:`tab_token`: a random token per browser tab (session), e.g. the owner of the jobs a tab started;
* :func:`password_gate`: a password (or token) box whose tries are limited per client (:data:`PER_CLIENT`) and for the
  whole app (:data:`OVERALL`), compared in constant time. The client is ``st.context.ip_address`` when
  Streamlit knows it, else the tab's token (a new tab gets new tries, but never past the overall cap);
* :func:`cookie_passed`: the browser sent this server's access cookie for the token (set by :mod:`ui.token_cookie`).
"""

from __future__ import annotations

import hashlib
import secrets
import sys

import streamlit as st

from asc import (
    AccessPolicy,
    RateLimiter,
    access_cookie_matches,
    access_cookie_name,
    password_matches,
    private_writes,
    study_mode,
)
from ui.serve import app_url

PER_CLIENT = (5, 60.0)  # tries per client per minute
OVERALL = (30, 60.0)  # tries per minute for everybody together (new tabs cannot multiply the tries)


def announce_token(token: str) -> None:
    """Print the address with a token this process made (plain ``streamlit run app.py``; ``make app`` makes and
    prints it before the server starts), on the server's standard error, once."""
    url = app_url(str(st.get_option("server.address") or ""), str(st.get_option("server.port")), token)
    print(f"AsC Studio's access token (ASC_TOKEN=off switches it off): {url}", file=sys.stderr, flush=True)


def policy() -> AccessPolicy:
    """What visitors of this server may use (the address Streamlit serves on, study mode, the ASC_* variables).
    Whichever call first makes this process's access token prints the address with it (:func:`announce_token`)."""
    return AccessPolicy.from_environment(str(st.get_option("server.address") or ""), study_mode(), announce_token)


def protect_files(shared: bool) -> None:
    """Shared mode (``shared``): everything this server process writes from now on (run folders, the study's
    database) is readable by its own account only (:func:`asc.atomic.private_writes`); local mode keeps the user's
    umask. The gate (:func:`ui.gate.enter`) calls it first, on every run of every route, before any page can start a
    job (``make app`` also sets the umask before the server starts: ``ui.serve``)."""
    private_writes(shared)


def tab_token() -> str:
    """A random token kept in this tab's session state (16 hex digits), made on first use."""
    if "asc_tab_token" not in st.session_state:
        st.session_state["asc_tab_token"] = secrets.token_hex(8)
    return str(st.session_state["asc_tab_token"])


def client_key() -> str:
    """Whom password tries are counted for: the client's IP address when known, else this tab."""
    try:
        address = st.context.ip_address
    except Exception:  # no client context (bare mode)
        address = None
    return f"ip:{address}" if isinstance(address, str) and address else f"tab:{tab_token()}"


@st.cache_resource(show_spinner=False)
def limiters(scope: str) -> tuple[RateLimiter, RateLimiter]:
    """The (per client, overall) limiters of one password box, shared by every session of the process."""
    return RateLimiter(*PER_CLIENT), RateLimiter(*OVERALL)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def passed(expected: str, key: str) -> bool:
    """Whether this tab already got past the box ``key`` with ``expected`` (no widget drawn)."""
    return bool(expected) and st.session_state.get(f"{key}_ok") == _digest(expected)


def cookie_passed(token: str, key: str) -> bool:
    """Whether the browser of this session sent the access cookie of ``token`` made by this server process
    (:func:`asc.access.access_cookie_matches`); then the tab is remembered as past the box ``key`` (as :func:`passed`
    reads it). A missing, forged or older server's cookie is no try: it only does not open (the box stays)."""
    try:
        value = st.context.cookies.get(access_cookie_name(str(st.get_option("server.port"))))
    except Exception:  # no client context (bare mode, AppTest)
        value = None
    if not isinstance(value, str) or not access_cookie_matches(value, token):
        return False
    st.session_state[f"{key}_ok"] = _digest(token)
    return True


def _verdict(typed: str, expected: str, scope: str, key: str) -> str:
    """``"ok"``, ``"wrong"`` or ``"limited"`` for ``typed``: each new value is one try of :data:`PER_CLIENT` and
    :data:`OVERALL` (over them, nothing is compared); a rerun with the same value is not a new try."""
    seen = st.session_state.get(f"{key}_tried")
    if seen is None or seen[0] != _digest(typed) or seen[1] == "limited":
        per_client, overall = limiters(scope)
        if not per_client.allow(client_key()) or not overall.allow("*"):
            seen = (_digest(typed), "limited")
        else:
            seen = (_digest(typed), "ok" if password_matches(typed, expected) else "wrong")
        st.session_state[f"{key}_tried"] = seen
    return str(seen[1])


def password_gate(expected: str, scope: str, label: str, key: str, offered: str = "",
                  wrong: str = "Wrong password.", help: str | None = None, count_wrong_only: bool = False) -> bool:
    """A password box (widget key ``key``); True once this tab typed ``expected`` (the box is then gone).

    ``offered``: a value that came another way (the ``?token=`` of the address), tried when the box is empty.
    Each new value is one try: over :data:`PER_CLIENT` or :data:`OVERALL` tries the box answers "too many tries"
    without comparing; reruns with the same value count once. ``wrong``: the line shown for a wrong value.
    ``count_wrong_only`` (the access token, long enough that guessing is hopeless): the right value always opens,
    and only wrong ones count, so another user's wrong tries cannot lock the owner out.
    """
    if passed(expected, key):
        return True
    box = st.empty()
    typed = box.text_input(label, type="password", key=key, help=help) or offered
    if not typed:
        return False
    right_first = count_wrong_only and password_matches(typed, expected)
    verdict = "ok" if right_first else _verdict(typed, expected, scope, key)
    if verdict == "ok":
        st.session_state[f"{key}_ok"] = _digest(expected)
        st.session_state.pop(f"{key}_tried", None)
        box.empty()
        return True
    if verdict == "limited":
        per_client, overall = limiters(scope)
        wait = max(1, round(max(per_client.retry_after(client_key()), overall.retry_after("*"))))
        st.error(f"Too many tries: wait {wait} s and try again.")
    else:
        st.error(wrong)
    return False
