"""ui/serve.py, make app's launcher: the options it reads, the address it prints (the server itself is started in
tests/attacks/test_gate_browser.py)."""

from __future__ import annotations

import os

import pytest

from ui.serve import _option, app_url


@pytest.mark.parametrize("args, value", [
    (["--server.port", "8502"], "8502"),
    (["--server.port=8503"], "8503"),
    (["--server.port", "1", "--server.port", "2"], "2"),  # the last one wins, as in Streamlit
    (["--server.headless", "true"], "8501"),
    (["--server.port"], "8501"),  # no value: the default
])
def test_options_are_read_in_both_spellings(args, value):
    assert _option(args, "--server.port", "8501") == value


@pytest.mark.parametrize("address, token, url", [
    ("127.0.0.1", "abc", "http://127.0.0.1:8501/?token=abc"),
    ("", None, "http://localhost:8501/"),
    ("0.0.0.0", None, "http://localhost:8501/"),
    ("::1", "t", "http://[::1]:8501/?token=t"),
    ("lab.example.org", None, "http://lab.example.org:8501/"),
])
def test_the_printed_address(address, token, url):
    assert app_url(address, "8501", token) == url



@pytest.mark.parametrize("args, env, expected", [
    ([], {}, ["--server.headless", "true", "--server.port", "8501", "--server.address", "127.0.0.1"]),
    ([], {"HOST": "0.0.0.0", "PORT": "9000"},  # make app's variables
     ["--server.headless", "true", "--server.port", "9000", "--server.address", "0.0.0.0"]),
    (["--server.port=8600", "--server.headless", "false"], {"PORT": "9000"},  # the command line wins
     ["--server.address", "127.0.0.1", "--server.port=8600", "--server.headless", "false"]),
])
def test_asc_studio_starts_the_launcher_with_make_apps_settings(monkeypatch, args, env, expected):
    """``asc-studio`` (ui.serve.console): make app's options where the command line does not give them, and its
    environment where the user has not set it."""
    import ui.serve as serve

    for name in ("HOST", "PORT", "HF_HUB_OFFLINE", "TOKENIZERS_PARALLELISM"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    seen = []
    monkeypatch.setattr(serve, "main", lambda argv: seen.append(argv) or 0)
    assert serve.console(args) == 0
    assert seen == [expected]
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TOKENIZERS_PARALLELISM"] == "false"


@pytest.mark.parametrize("args, gc_option", [
    ([], ["--runner.postScriptGC", "false"]),
    (["--runner.postScriptGC", "true"], ["--runner.postScriptGC", "true"]),  # the user's choice is kept
    (["--runner.postScriptGC=true"], ["--runner.postScriptGC=true"]),
])
def test_the_server_collects_no_garbage_after_each_run_unless_asked(args, gc_option):
    """Streamlit's gc.collect(2) after every script run walks the loaded model's objects: 0.3-0.45 s of CPU per click
    (ui/serve.py, QUIET_SERVER). make app's server and a plain ``streamlit run app.py`` (its config file) skip it."""
    import tomllib

    from tests.helpers import ROOT
    from ui.serve import server_options

    options = server_options(args)
    gc_at = [i for i, a in enumerate(options) if a.startswith("--runner.postScriptGC")]
    assert len(gc_at) == 1 and options[gc_at[0]: gc_at[0] + len(gc_option)] == gc_option, options
    assert options[len(options) - len(args):] == args  # the command line comes last: Streamlit takes the last
    assert options[options.index("--server.fileWatcherType") + 1] == "none"
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
