"""The one guard every route runs first: :func:`enter`, called by ``app.py`` and as the first statement of
every file in ``pages/``.

Why the pages call it too, and not only the router: Streamlit still serves a ``pages/`` folder by its
file names (``/global_eval``, ``/study_admin``) with its legacy router, which runs the page file *without*
``app.py``, until some script run calls ``st.navigation``. On a fresh server that was every request
until someone got past the router's gate. So no page trusts the router: each one checks access itself,
through this module, before it draws or reads anything.

What :func:`enter` does, in order (each step stops the script until it is satisfied):

0. in shared mode, private writes for this process (files 0600, folders 0700: :func:`ui.access.protect_files`),
   before any page can start a job. Under the legacy routing (a fresh server that has not run
   ``st.navigation`` yet: :func:`legacy_routing`), replace its sidebar list of page files by a hidden
   navigation: this ends the legacy routing for every session, and an anonymous visitor does not even see the
   pages' names. A page reached that way then only links to ``/``.
1. ``ASC_PASSWORD`` when set: the app's password (rate-limited, constant time: :mod:`ui.access`);
2. the server's access token when the policy asks for one (local mode unless ``ASC_TOKEN=off``, or an
   admin's explicit ``ASC_TOKEN``): from the address (``?token=...``, as ``make app`` prints it) or typed
   into a box; counted and compared like the password;
3. in study mode, only the study pages (``study=True``): participants never reach the others, whatever the
   route.

A tab that got past a box is remembered in its session state (a digest of the secret, so a new token or
password after a restart asks again). A browser that opened the address with the token on a server started by
``make app`` (:mod:`ui.serve`) also holds the server's access cookie (:mod:`ui.token_cookie`), which lets every later
session of that browser past the token (not past the password): reloads, links, new tabs. Under plain ``streamlit run
app.py`` there is no cookie: a reload of the address with ``?token=`` works, a tab without it asks again.
Once past, the token box's words are gone too (every page runs the gate twice: the router's and its own).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from urllib.parse import urlencode

import streamlit as st
from streamlit.runtime.pages_manager import PagesManager
from streamlit.runtime.scriptrunner import get_script_run_ctx

from asc import APP_ROOT, AscError, app_password, study_mode
from ui import access

TOKEN_KEY = "app_token"  # the token box's widget key
PASSWORD_KEY = "app_pw"  # the app password box's widget key
_ROUTED: ContextVar[bool] = ContextVar("asc_routed", default=False)  # inside app.py's ``page.run()`` (:func:`routed`)


def _token_passed(token: str) -> bool:
    """Whether this tab is past the token: it typed or brought it before, or its browser holds the access cookie."""
    return access.passed(token, TOKEN_KEY) or access.cookie_passed(token, TOKEN_KEY)


def _passed(token: str | None) -> bool:
    """Whether this tab got past the password and the token it needs (draws nothing)."""
    password = app_password()
    return (not password or access.passed(password, PASSWORD_KEY)) and (token is None or _token_passed(token))


def _token_box(token: str) -> bool:
    """True when this tab is past the token; else the box (and, without ``?token=``, the one line saying where the
    token is), True once it takes the right one."""
    if _token_passed(token):
        return True
    offered = st.query_params.get("token", "")
    if not offered:
        st.info("This AsC Studio asks for its access token, as Jupyter does: open the address printed where the "
                "app was started (it ends in `?token=...`), or paste the token below.")
    return access.password_gate(token, "token", "Access token", TOKEN_KEY, offered=str(offered), count_wrong_only=True,
                                wrong="Wrong access token: copy it again from the address the app printed at start.",
                                help="Printed by `make app`; set your own with ASC_TOKEN, or switch it off with "
                                     "ASC_TOKEN=off (then every account on this machine can use the app).")


@contextmanager
def routed() -> Iterator[None]:
    """``app.py`` runs the page its navigation chose inside this: a page file run outside it while ``app.py`` is the
    main script was started by the legacy routing (:func:`legacy_routing`)."""
    mark = _ROUTED.set(True)
    try:
        yield
    finally:
        _ROUTED.reset(mark)


def _main_script_is_the_app() -> bool:
    ctx = get_script_run_ctx()
    if ctx is None:
        return False
    return Path(ctx.pages_manager.main_script_path).resolve() == (APP_ROOT / "app.py").resolve()


def legacy_routing(router: bool = False) -> bool:
    """Whether this script run is routed by the ``pages/`` folder's file names.

    True while Streamlit still routes that way (until a run calls ``st.navigation``; Streamlit 1.67 keeps this in
    ``PagesManager.uses_pages_directory``), and for a page file (``router`` false) that runs while ``app.py`` is the
    main script but outside ``app.py``'s :func:`routed`. The second case is a run that Streamlit started in the
    legacy routing, which lists the page files in its sidebar, while another session's gate ended that routing for
    the server before this run reached its own gate: sessions opened side by side on a fresh server. A page run
    alone (AppTest of the page file) has itself as the main script and is not legacy.

    Left open: ``app.py`` itself, started in the legacy routing just before another session ended it, keeps the
    page files' names in its sidebar until the visitor passes the gate (names only: the gate stops the run before
    anything else). Only plain ``streamlit run app.py`` has the legacy routing at all: ``make app`` and
    ``asc-studio`` (:mod:`ui.serve`) switch it off before the first session."""
    if getattr(PagesManager, "uses_pages_directory", False):
        return True
    return not router and not _ROUTED.get() and _main_script_is_the_app()


def enter(study: bool = False, router: bool = False) -> None:
    """Stop this script run unless the visitor may see what follows: the password, the token, and in study mode
    only the study pages (``study``: the calling page is one). ``router``: the caller is ``app.py``, which routes
    itself; a page reached by the legacy routing only links to the app. Call it before anything else is drawn."""
    try:
        policy = access.policy()
    except AscError as err:  # an ASC_TOKEN too short to stand unlimited tries
        st.error(str(err))
        st.stop()
    access.protect_files(policy.shared)
    token, legacy = policy.token, legacy_routing(router)
    if legacy and not (router and _passed(token)):  # (the router's own navigation ends it for an admitted visitor)
        # a hidden navigation of the app alone: ends the legacy routing, hides its list of page files
        st.navigation([st.Page(str(APP_ROOT / "app.py"), title="AsC Studio", default=True)], position="hidden")
    password = app_password()
    if password and not access.password_gate(password, "app", "Password", key=PASSWORD_KEY):
        st.stop()  # nothing of the app (not even its pages' names) before the right password
    if token is not None and not _token_box(token):
        st.stop()
    if study_mode() and not study:
        st.info("This server runs a user study: open its start page, `/`.")
        st.stop()
    if legacy and not router:
        query = urlencode(st.query_params.to_dict())
        st.info(f"This address is from an older AsC Studio: [open the app](/{'?' + query if query else ''}).")
        st.stop()
