"""The access token's cookie, as Jupyter keeps its own: ``make app``'s server remembers a browser that opened the address
with the right token, so that reloads, links and new tabs of that browser stay in.

A Streamlit script cannot set a cookie that page scripts cannot read (``st.context.cookies`` is read-only, and a
cookie set from the page would be readable by it), so the server does it: :class:`TokenCookieMiddleware` sits in
front of Streamlit's own HTTP routes. A page request (GET or HEAD) whose address carries the right ``?token=`` gets no
page but a redirect (303) to the same address without the token, with the cookie :func:`asc.access.access_cookie_value`
of the token: a session cookie for the app's base path, ``HttpOnly``, ``SameSite=Strict``, ``Secure`` over https,
named after the port (:func:`asc.access.access_cookie_name`). The page then loads without the token in its address
(nor in the browser's history or a ``Referer``); its session's connection sends the cookie, and the gate
(:func:`ui.access.cookie_passed`) lets it in. Everything else passes through untouched: a wrong token goes on to the
page, whose gate says so and counts the try (:mod:`ui.access`); websocket connections, other methods, addresses
without a token, and every request when the app asks for no token.

:func:`install` puts the middleware into the server that ``streamlit run app.py`` builds, in the server's own process
(``python -m ui.serve --child``, :func:`ui.serve.run_streamlit`), so the cookie's key (a secret per process, in
:mod:`asc.access`) is the one the gate checks against. Streamlit 1.67 builds that server's middleware list in
``starlette_app.create_streamlit_middleware`` (called when the server starts); :func:`install` adds this one in front.
Streamlit's ``st.App`` also takes middleware, but serves an app through its ``st.App`` mode, which ``app.py`` (a plain
Streamlit script) is not. Plain ``streamlit run app.py`` has no middleware: there the token opens one tab at a time.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode

from asc import AscError, access_cookie_header, access_cookie_name, access_cookie_value, password_matches

__all__ = ["TokenCookieMiddleware", "install", "redirect_target"]

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]
TOKEN_PARAMETER = "token"


def redirect_target(raw_path: str, pairs: list[tuple[str, str]]) -> str:
    """Where a request to ``raw_path`` (as sent, percent-encoded) with the query ``pairs`` goes once its token is taken
    out: the same path on this server (leading slashes and backslashes folded into one ``/``, so ``//other.host`` can
    never send the browser to another site) and the other parameters, in their order."""
    path = "/" + raw_path.lstrip("/\\")
    rest = [(name, value) for name, value in pairs if name != TOKEN_PARAMETER]
    return path + ("?" + urlencode(rest, quote_via=quote) if rest else "")


class TokenCookieMiddleware:
    """ASGI middleware: a GET or HEAD with the right ``?token=`` is answered with the access cookie and a redirect to
    the address without the token (module doc); everything else goes to ``app``.

    ``token``: the token the app asks for now (None: none; called only for a request that offers one, and an error in
    it lets the request through, to the gate that shows it); ``port``: the port the server listens on (the cookie's
    name); ``base_path``: Streamlit's ``server.baseUrlPath`` (the cookie's path)."""

    def __init__(self, app: ASGIApp, token: Callable[[], str | None], port: Callable[[], int | str],
                 base_path: Callable[[], str]) -> None:
        self.app = app
        self.token = token
        self.port = port
        self.base_path = base_path

    def _expected(self) -> str | None:
        try:
            return self.token()
        except AscError:  # an ASC_TOKEN too short: the gate tells the visitor
            return None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http" or scope.get("method") not in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        query = bytes(scope.get("query_string") or b"").decode("latin-1")
        pairs = parse_qsl(query, keep_blank_values=True)
        offered = [value for name, value in pairs if name == TOKEN_PARAMETER]
        expected = self._expected() if offered else None
        if expected is None or not password_matches(offered[-1], expected):  # the last one, as st.query_params reads
            await self.app(scope, receive, send)
            return
        raw_path = bytes(scope.get("raw_path") or quote(str(scope.get("path", "/"))).encode("ascii")).decode("latin-1")
        cookie = access_cookie_header(access_cookie_name(self.port()), access_cookie_value(expected),
                                      self.base_path(), secure=scope.get("scheme") == "https")
        headers = [(b"location", redirect_target(raw_path, pairs).encode("latin-1")),
                   (b"set-cookie", cookie.encode("latin-1")), (b"cache-control", b"no-store"),
                   (b"referrer-policy", b"no-referrer"), (b"content-length", b"0")]
        await send({"type": "http.response.start", "status": 303, "headers": headers})
        await send({"type": "http.response.body", "body": b""})


def install(token: Callable[[], str | None]) -> bool:
    """Put :class:`TokenCookieMiddleware` in front of the Streamlit server this process is about to start (call it
    before ``streamlit run``); ``token`` as the middleware's. The port and base path are Streamlit's options, read per
    request. False (nothing installed) when this Streamlit builds its server another way: the app then works as under
    plain ``streamlit run``, without the cookie."""
    from starlette.middleware import Middleware
    from streamlit import config
    from streamlit.web.server.starlette import starlette_app

    streamlit_middleware = getattr(starlette_app, "create_streamlit_middleware", None)
    if streamlit_middleware is None or getattr(streamlit_middleware, "asc_token_cookie", False):
        return streamlit_middleware is not None

    def with_token_cookie() -> list[Middleware]:
        ours = Middleware(TokenCookieMiddleware, token=token, port=lambda: config.get_option("server.port"),
                          base_path=lambda: str(config.get_option("server.baseUrlPath") or ""))
        return [ours, *streamlit_middleware()]

    with_token_cookie.asc_token_cookie = True  # type: ignore[attr-defined]
    starlette_app.create_streamlit_middleware = with_token_cookie
    return True
