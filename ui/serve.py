"""``make app``'s launcher: starts ``streamlit run app.py`` and prints the address to open, with its token.

``python -m ui.serve [streamlit options]`` passes every option on to ``streamlit run app.py`` (``make app``
gives ``--server.address``, ``--server.port`` and ``--server.headless``). Before it starts Streamlit it
decides, with the app's own rule (:meth:`asc.access.AccessPolicy.from_environment`), whether the app will
ask for an access token. When it will and ``ASC_TOKEN`` is unset, it makes a random token and hands it to
the server in the environment (never on the command line, which every account can read in ``ps``). Once
the server answers its health check, it prints one line, as ``jupyter lab`` does::

    AsC Studio (local mode): http://127.0.0.1:8501/?token=Zp3...

Streamlit's own "You can now view your Streamlit app" line has no token: open the line printed after it.
The server watches no files and collects no garbage after every script run (:data:`QUIET_SERVER`, unless the
options say otherwise). The launcher stays in the foreground and ends with the server (Ctrl-C stops both).

``asc-studio`` (the console script of a pip install, :func:`console`) is this launcher with ``make app``'s settings
as defaults: ``--server.headless true``, ``--server.port $PORT`` (8501) and ``--server.address $HOST``
(127.0.0.1) unless given, ``HF_HUB_OFFLINE=1`` and ``TOKENIZERS_PARALLELISM=false`` unless set
(:func:`asc.paths.app_defaults`). Installed, the app's files are the ``asc_app`` package's
(:data:`asc.paths.APP_ROOT`), and the server keeps the launcher's working directory (relative folders are taken
from there: :func:`asc.paths.base_folder`); it is started with ``python -P``, so a folder named ``ui`` or ``asc``
there is not imported in place of the installed packages.

The server it starts (``python -m ui.serve --child run app.py ...``, :func:`run_streamlit`) is Streamlit's own
command line with one setting made first: no legacy routing by the ``pages/`` folder's file names (which
Streamlit turns on for every app with a ``pages/`` folder until a script run calls ``st.navigation``). So
the very first visitor of a fresh server is routed by ``app.py`` like every later one (no "Page not found"
for ``/global-asc-eval``, no page file run on its own). Plain ``streamlit run app.py`` still works: there
the gate of every page (:mod:`ui.gate`) covers the legacy routing.

That server also remembers a browser that opened the address with the token, in an ``HttpOnly``, ``SameSite=Strict``
cookie that is not the token (:mod:`ui.token_cookie`): its reloads, links and new tabs stay in, as with Jupyter. Plain
``streamlit run app.py`` has no such cookie: there a tab without ``?token=`` asks for the token again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Sequence
from types import FrameType

from asc import (
    APP_INSTALLED,
    APP_ROOT,
    AccessPolicy,
    AscError,
    app_defaults,
    child_environment,
    is_loopback,
    require,
    study_mode,
)

__all__ = ["app_url", "console", "main", "server_options"]

START_TIMEOUT = 180.0  # seconds to wait for the server's health check before giving up on printing
# an app, not a development server: no watching of the source tree and the runs folder for changes (Streamlit's
# watchdog rescanned the tree on every inotify queue overflow: half a core with one idle tab, and a log of 61,348
# "Inotify queue overflowed" lines); a developer who wants reruns on save passes --server.fileWatcherType auto.
# No full garbage collection after every script run either (runner.postScriptGC, also off in .streamlit/config.toml
# for a plain ``streamlit run app.py``): with a model loaded, gc.collect(2) walks half a million objects, 0.3-0.45 s
# of CPU after every click (a py-spy profile of the browser tests put a fifth of the app server's time there);
# Python's own collector still runs as objects pile up, and the imports' objects are frozen (ui/preload.py)
QUIET_SERVER = {"--server.fileWatcherType": "none", "--server.runOnSave": "false", "--runner.postScriptGC": "false"}


def _option(args: Sequence[str], name: str, default: str) -> str:
    """The value of a Streamlit option given as ``--name value`` or ``--name=value`` (the last one wins)."""
    value = default
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            value = args[i + 1]
        elif arg.startswith(name + "="):
            value = arg.split("=", 1)[1]
    return value


def app_url(address: str, port: str, token: str | None) -> str:
    """The address to open: ``localhost`` for every-interface addresses, ``?token=`` when one is asked for."""
    host = "localhost" if address in ("", "0.0.0.0", "::") else address
    host = f"[{host}]" if ":" in host else host
    return f"http://{host}:{port}/" + (f"?token={token}" if token else "")


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, timeout: float) -> bool:
    """True once ``url`` answers; False when the server exited or ``timeout`` passed (no proxy: ``http_proxy``
    must not decide whether a server on this machine is up)."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with opener.open(url, timeout=2):
                return True
        except OSError:
            time.sleep(0.3)
    return False


def _server_token() -> str | None:
    """The token this server process asks for (the gate's rule: :func:`ui.access.policy`)."""
    from streamlit import config

    return AccessPolicy.from_environment(str(config.get_option("server.address") or ""), study_mode()).token


def run_streamlit(argv: Sequence[str]) -> None:
    """Streamlit's command line (``argv``: e.g. ``run app.py --server.port 8501``) without the legacy routing by
    the ``pages/`` folder (Streamlit 1.67 decides it once per process, in ``PagesManager.uses_pages_directory``,
    when the first session starts; set here before any session exists), and with the access token's cookie
    (:func:`ui.token_cookie.install`; a warning when this Streamlit cannot take it)."""
    from streamlit.runtime.pages_manager import PagesManager
    from streamlit.web.cli import main as streamlit_main

    from ui.token_cookie import install

    PagesManager.uses_pages_directory = False
    if not install(_server_token):
        print("warning: this Streamlit cannot take the access cookie (ui/token_cookie.py): a tab without ?token= "
              "asks for the token again", file=sys.stderr, flush=True)
    sys.argv = ["streamlit", *argv]
    streamlit_main(prog_name="streamlit")


def main(argv: Sequence[str] | None = None) -> int:
    """Start the app with ``argv`` as Streamlit options; print its address once it answers; return its exit code."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--child"]:  # the server process itself
        run_streamlit(args[1:])
        return 0
    address = _option(args, "--server.address", "")
    port = _option(args, "--server.port", "8501")
    try:
        policy = AccessPolicy.from_environment(address, study_mode())
    except AscError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if policy.shared:
        os.umask(0o077)  # a shared server's files are its own from the first one (the gate sets it too)
    # the same token in the server (made here, printed below), in its environment and never on its command line
    env = child_environment(**({"ASC_TOKEN": policy.token} if policy.token is not None else {}))
    # a clone: the server runs in the clone's folder (``-m`` puts it on sys.path); installed: in this folder, which
    # ``-P`` keeps off sys.path
    python = [sys.executable, "-P"] if APP_INSTALLED else [sys.executable]
    proc = subprocess.Popen([*python, "-m", "ui.serve", "--child", "run", str(APP_ROOT / "app.py"),
                             *server_options(args)], env=env, cwd=None if APP_INSTALLED else APP_ROOT)

    def forward(signum: int, frame: FrameType | None) -> None:
        proc.send_signal(signum)

    signal.signal(signal.SIGTERM, forward)
    probe = "127.0.0.1" if address in ("", "0.0.0.0") else ("::1" if address == "::" else address)
    try:
        up = _wait_healthy(proc, app_url(probe, port, None) + "_stcore/health", START_TIMEOUT)
        if up or proc.poll() is None:  # printed even when the health check never answered (a base URL path, say)
            mode = "shared mode: see docs/sharing.md, 'Sharing the app'" if policy.shared else "local mode"
            print(f"\n  AsC Studio ({mode}): {app_url(address, port, policy.token)}\n", flush=True)
            if not policy.shared and not is_loopback(address):
                print("  ASC_SHARED=0 on a network address: everybody who has the token can use every feature.",
                      flush=True)
        return proc.wait()
    except KeyboardInterrupt:  # Ctrl-C reaches both processes: let Streamlit finish
        return proc.wait()


def server_options(args: Sequence[str]) -> list[str]:
    """The server's Streamlit options: :data:`QUIET_SERVER`'s where ``args`` do not give them, then ``args``."""
    quiet = [part for name, value in QUIET_SERVER.items() if not _has_option(args, name) for part in (name, value)]
    return [*quiet, *args]


def _has_option(args: Sequence[str], name: str) -> bool:
    return any(arg == name or arg.startswith(name + "=") for arg in args)


def console(argv: Sequence[str] | None = None) -> int:
    """``asc-studio [streamlit options]``: :func:`main` with ``make app``'s options and environment as defaults
    (module doc); one line naming the extra when Streamlit is not installed."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        require("streamlit", "sqlalchemy", extra="app", feature="the app (asc-studio)")
    except AscError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    host, port = app_defaults()
    defaults = {"--server.headless": "true", "--server.port": port, "--server.address": host}
    return main([*(part for name, value in defaults.items() if not _has_option(args, name) for part in (name, value)),
                 *args])


if __name__ == "__main__":
    sys.exit(main())
