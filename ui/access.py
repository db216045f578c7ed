"""The Streamlit side of :mod:`asc.access`: this server's policy, the browser tab's token, the password box.

* :func:`policy`: shared or local mode from ``server.address`` and study mode (see :mod:`asc.access`);
* :func:`protect_files`: a shared server writes its files ``0600`` and folders ``0700`` (:mod:`asc.atomic`);
* :func:`tab_token`: a random token per browser tab (session), e.g. the owner of the jobs a tab started;
* :func:`password_gate`: a password box whose tries are limited per client (:data:`PER_CLIENT`) and for the
  whole app (:data:`OVERALL`), compared in constant time. The client is ``st.context.ip_address`` when
  Streamlit knows it, else the tab's token (a new tab gets new tries, but never past the overall cap).
"""

from __future__ import annotations

import hashlib
import secrets

import streamlit as st

from asc.access import AccessPolicy, RateLimiter, password_matches
from asc.atomic import private_writes
from asc.paths import study_mode

PER_CLIENT = (5, 60.0)  # tries per client per minute
OVERALL = (30, 60.0)  # tries per minute for everybody together (new tabs cannot multiply the tries)


def policy() -> AccessPolicy:
    """What visitors of this server may use (the address Streamlit serves on, study mode, the ASC_* variables)."""
    return AccessPolicy.from_environment(str(st.get_option("server.address") or ""), study_mode())


def protect_files() -> None:
    """Shared mode: everything this server process writes from now on (run folders, the study's database) is
    readable by its own account only (:func:`asc.atomic.private_writes`); local mode keeps the user's umask. The
    router (``app.py``) calls it first, on every run, before any page can start a job."""
    private_writes(policy().shared)


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


def password_gate(expected: str, scope: str, label: str, key: str) -> bool:
    """A password box (widget key ``key``); True once this tab typed ``expected`` (the box is then gone).

    Each new value typed is one try: over :data:`PER_CLIENT` or :data:`OVERALL` tries the box answers
    "too many tries" without comparing; reruns with the same value count once.
    """
    if st.session_state.get(f"{key}_ok") == _digest(expected):
        return True
    box = st.empty()
    typed = box.text_input(label, type="password", key=key)
    if not typed:
        return False
    seen = st.session_state.get(f"{key}_tried")
    if seen is None or seen[0] != _digest(typed) or seen[1] == "limited":
        per_client, overall = limiters(scope)
        client = client_key()
        if not per_client.allow(client) or not overall.allow("*"):
            seen = (_digest(typed), "limited")
        else:
            seen = (_digest(typed), "ok" if password_matches(typed, expected) else "wrong")
        st.session_state[f"{key}_tried"] = seen
    if seen[1] == "ok":
        st.session_state[f"{key}_ok"] = _digest(expected)
        st.session_state.pop(f"{key}_tried", None)
        box.empty()
        return True
    if seen[1] == "limited":
        per_client, overall = limiters(scope)
        wait = max(1, round(max(per_client.retry_after(client_key()), overall.retry_after("*"))))
        st.error(f"Too many tries: wait {wait} s and try again.")
    else:
        st.error("Wrong password.")
    return False
