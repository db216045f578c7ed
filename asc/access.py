"""Who may do what: shared or local mode, the models and corpora a visitor may use, password checks.

The app is **local** when only this machine can reach it (its server address is a loopback address) and
**shared** otherwise: Streamlit without an address listens on every interface, ``make study`` serves the
local network, and study mode is shared whatever the address. ``ASC_SHARED=1``/``0`` overrides.

In shared mode (:class:`AccessPolicy`) a visitor may load the embedded models and the ids the admin lists
in ``ASC_ALLOWED_MODELS``, nothing typed (a path would load, or tell apart, server folders); may trust a
model's remote code only with ``ASC_ALLOW_REMOTE_CODE=1``; and may read corpora only among the built-in
ones or under ``ASC_DATA_ROOTS``. In local mode everything stays open (the user owns the machine).

In local mode a visitor also presents the server's **access token** (:func:`server_token`), as Jupyter asks
for its token even on localhost: loopback is reachable by every account of the machine, and local mode
lets a visitor run a model's own code, read any file as a corpus and run HumanEval's test runner. The
token is ``ASC_TOKEN`` when set, else a random one made once per server process (``make app`` prints the
address with it); ``ASC_TOKEN=off`` is the one way to switch it off. A shared app asks for a token only
when the admin sets ``ASC_TOKEN`` (its visitors are restricted anyway; ``ASC_PASSWORD`` keeps strangers out).

Passwords and tokens are compared in constant time (:func:`password_matches`) and tries are limited
(:class:`RateLimiter`). Nothing here imports Streamlit: ``ui.access`` feeds in the server address and
the client's key.

A browser that opened the address with the right token keeps its access in a cookie (``make app`` only:
:mod:`ui.token_cookie` sets it, the gate reads it). The cookie is not the token: it is the HMAC-SHA256 of the
token under a secret made at random once per server process (:func:`access_cookie_value`), checked in constant
time (:func:`access_cookie_matches`). So a cookie that leaks does not give the token away, a restart (or a new
token) makes every earlier cookie worthless, and nobody can make a valid one without the server's memory.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from asc import paths
from asc.corpus.sources import BUILTIN_CORPORA, check_corpus_spec
from asc.errors import InputError
from asc.files import check_path_text
from asc.models import embedded_names

__all__ = ["ACCESS_COOKIE", "MIN_TOKEN_CHARS", "AccessPolicy", "RateLimiter", "access_cookie_header", "access_cookie_matches",
           "access_cookie_name", "access_cookie_value", "is_loopback", "password_matches", "server_token"]

MIN_TOKEN_CHARS = 16  # an ASC_TOKEN the user sets (the random one has 32)
_token_lock = threading.Lock()
_made_token: list[str] = []  # the random token of this process, once made
ACCESS_COOKIE = "asc-access"  # the access cookie's name, before the port (:func:`access_cookie_name`)
_cookie_secret: list[bytes] = []  # the key of this process's access cookies, once made (:func:`access_cookie_value`)


def is_loopback(address: str) -> bool:
    """True for ``localhost`` and loopback IPs (``127.x.x.x``, ``::1``); False for "" (every interface), other
    names and other addresses."""
    address = address.strip().strip("[]").lower()
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def password_matches(given: str, expected: str) -> bool:
    """``given == expected`` in constant time (SHA-256 digests compared with ``hmac.compare_digest``, so neither
    the length nor the first differing character shows in the time taken); False when ``expected`` is empty."""
    if not expected:
        return False
    digest = hashlib.sha256(given.encode("utf-8", "surrogatepass")).digest()
    return hmac.compare_digest(digest, hashlib.sha256(expected.encode("utf-8", "surrogatepass")).digest())


def server_token(announce: Callable[[str], None] | None = None) -> str | None:
    """This server's access token: ``$ASC_TOKEN`` when set; None when ``ASC_TOKEN=off``; else a random token
    (``secrets.token_urlsafe(24)``, 192 bits) made on first use and kept for the life of the process.
    ``announce`` is called with a token made here, once, so the server can print its address."""
    setting = paths.access_token()
    if setting == paths.TOKEN_OFF:
        return None
    if setting:
        if len(setting) < MIN_TOKEN_CHARS:
            raise InputError(f"ASC_TOKEN has {len(setting)} characters; a token must have at least {MIN_TOKEN_CHARS} "
                             "(it is compared without a limit on tries): unset it for a random one, or choose a "
                             "longer one")
        return setting
    with _token_lock:
        if not _made_token:
            _made_token.append(secrets.token_urlsafe(24))
            if announce is not None:
                announce(_made_token[0])
        return _made_token[0]


def access_cookie_name(port: int | str) -> str:
    """The access cookie's name for a server on ``port``: browsers send a host's cookies to every port of it, so two
    apps on one machine (8501, 8502) each keep their own cookie."""
    return f"{ACCESS_COOKIE}-{port}"


def _cookie_key() -> bytes:
    with _token_lock:
        if not _cookie_secret:
            _cookie_secret.append(secrets.token_bytes(32))
        return _cookie_secret[0]


def access_cookie_value(token: str) -> str:
    """The access cookie's value for ``token``: HMAC-SHA256 of the token under this process's secret (random, made on
    first use, never stored or sent), in hex. Not the token: a leaked cookie does not tell it, and opens the app only
    until the server restarts."""
    message = b"asc-access-cookie\0" + token.encode("utf-8", "surrogatepass")
    return hmac.new(_cookie_key(), message, hashlib.sha256).hexdigest()


def access_cookie_matches(value: str, token: str) -> bool:
    """Whether ``value`` (a cookie the browser sent) is :func:`access_cookie_value` of ``token``, compared in constant
    time; False for an empty token or value."""
    if not token or not value:
        return False
    return hmac.compare_digest(value.encode("utf-8", "surrogatepass"), access_cookie_value(token).encode("ascii"))


def access_cookie_header(name: str, value: str, path: str = "/", secure: bool = False) -> str:
    """A ``Set-Cookie`` value: a session cookie (no expiry: it ends with the browser session) for ``path`` (the app's
    base path), ``HttpOnly`` (page scripts cannot read it), ``SameSite=Strict`` (other sites' pages and links never
    send it) and ``Secure`` when the app is served over https."""
    path = "/" + quote(path.strip("/"), safe="/") if path.strip("/") else "/"
    return f"{name}={value}; Path={path}; HttpOnly; SameSite=Strict" + ("; Secure" if secure else "")


class RateLimiter:
    """At most ``max_tries`` calls of :meth:`allow` per key within any ``per_seconds`` window (thread-safe)."""

    def __init__(self, max_tries: int, per_seconds: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.max_tries = max_tries
        self.per_seconds = per_seconds
        self._clock = clock
        self._tries: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, key: str) -> bool:
        """Count a try for ``key``: True when it is within the limit, False (not counted) when over it."""
        now = self._clock()
        with self._lock:
            for k in [k for k, q in self._tries.items() if q and q[-1] <= now - self.per_seconds]:
                del self._tries[k]  # forget quiet keys: the table stays as small as the recent clients
            tries = self._tries.setdefault(key, deque())
            while tries and tries[0] <= now - self.per_seconds:
                tries.popleft()
            if len(tries) >= self.max_tries:
                return False
            tries.append(now)
            return True

    def retry_after(self, key: str) -> float:
        """Seconds until ``key`` may try again (0 when it may now)."""
        now = self._clock()
        with self._lock:
            tries = self._tries.get(key)
            if not tries or len(tries) < self.max_tries:
                return 0.0
            return max(0.0, tries[0] + self.per_seconds - now)


@dataclass(frozen=True)
class AccessPolicy:
    """What visitors may use. ``allowed_models``: ids allowed besides the embedded models (None: none);
    ``data_roots``: folders corpus paths must lie in (None: any folder locally, none when shared);
    ``token``: the access token visitors must present (None: none asked)."""

    shared: bool
    allowed_models: tuple[str, ...] | None = None
    allow_remote_code: bool = False
    data_roots: tuple[Path, ...] | None = None
    token: str | None = None

    @classmethod
    def from_environment(cls, server_address: str, study_mode: bool,
                         announce: Callable[[str], None] | None = None) -> AccessPolicy:
        """The policy of a server at ``server_address`` (``""``: every interface), with the admin's variables
        (``ASC_SHARED``, ``ASC_ALLOWED_MODELS`` plus ``ASC_MODEL``, ``ASC_ALLOW_REMOTE_CODE``, ``ASC_DATA_ROOTS``,
        ``ASC_TOKEN``). ``announce``: see :func:`server_token` (local mode makes a token on first use)."""
        override = paths.shared_override()
        shared = override if override is not None else (study_mode or not is_loopback(server_address))
        roots = paths.data_roots()
        models = paths.allowed_models()
        if paths.default_model() not in embedded_names():  # the admin's ASC_MODEL is allowed too
            models = tuple(dict.fromkeys([*models, paths.default_model()]))
        explicit = paths.access_token() not in ("", paths.TOKEN_OFF)
        token = server_token(announce) if (explicit or not shared) else None
        return cls(shared=shared, allowed_models=models or None, allow_remote_code=paths.allow_remote_code(),
                   data_roots=None if roots is None else tuple(roots), token=token)

    def model_choices(self, names: list[str]) -> list[str]:
        """``names`` (embedded models) followed by the admin's allowed ids (shared mode), without repeats."""
        extra = list(self.allowed_models or ()) if self.shared else []
        return list(dict.fromkeys([*names, *extra]))

    def check_model(self, spec: str) -> None:
        """InputError unless ``spec`` may be loaded. Shared: an embedded name or one of ``ASC_ALLOWED_MODELS``,
        decided on the text alone (the message is the same whether or not a folder of that name exists)."""
        if not self.shared or spec in embedded_names() or spec in (self.allowed_models or ()):
            return
        raise InputError(f"model {spec!r} is not offered on this shared server: choose one of the listed models "
                         "(the server's admin can add Hugging Face ids with ASC_ALLOWED_MODELS)")

    @property
    def remote_code_allowed(self) -> bool:
        """Whether visitors may turn on "Trust remote code" (always locally)."""
        return not self.shared or self.allow_remote_code

    def check_remote_code(self, flag: bool) -> None:
        """InputError when ``flag`` asks to run a model's own code on a shared server that does not allow it."""
        if flag and not self.remote_code_allowed:
            raise InputError("this shared server does not run models' remote code (the admin can allow it with "
                             "ASC_ALLOW_REMOTE_CODE=1)")

    def corpus_paths_allowed(self) -> bool:
        """Whether a corpus may be a path (locally always; shared only with ``ASC_DATA_ROOTS``)."""
        return not self.shared or bool(self.data_roots)

    @property
    def corpus_roots(self) -> tuple[Path, ...] | None:
        """The folders every corpus load must stay in: the data roots, and in shared mode nothing else (``()``:
        built-in corpora only); None locally without ``ASC_DATA_ROOTS``. Jobs get it too (defence in depth)."""
        return (self.data_roots or ()) if self.shared else self.data_roots

    def check_corpus(self, spec: str) -> None:
        """An :class:`asc.errors.AscError` unless ``spec`` may be read: a built-in corpus, or a path inside the
        data roots (shared mode: none unless ``ASC_DATA_ROOTS`` names some) that a file system can name. See
        :func:`asc.corpus.sources.check_corpus_spec`."""
        if spec in BUILTIN_CORPORA:
            return
        check_path_text(spec, "corpus")  # a NUL or an over-long name: one line here, not an OSError in a job
        check_corpus_spec(spec, self.corpus_roots)
