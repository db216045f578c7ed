"""Shared mode: on a server others can reach, a visitor picks among the models and corpora the admin allows.

The app is shared when its server address is not a loopback address (Streamlit's default, no address,
listens on every interface), in study mode, or when ``ASC_SHARED=1``; ``ASC_SHARED=0`` forces local
mode (tests/conftest.py sets it for every test; these tests set their own). In shared mode:

* no free-text model field (only embedded models and ``ASC_ALLOWED_MODELS``), and a typed path never
  reaches the loader, whose messages would tell whether a server folder exists;
* "Trust remote code" only with ``ASC_ALLOW_REMOTE_CODE=1``;
* corpus paths only under ``ASC_DATA_ROOTS`` (else the built-in corpora only), on the Global AsC-Eval
  page and on the Attention maps page (which shows the snippets it read);
* pages check before they submit: an error is never followed by a submitted job.

``make app`` serves on ``HOST`` (127.0.0.1 unless given), ``make study`` on every interface.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from asc.errors import InputError
from tests.helpers import ROOT
from tests.pages.helpers import APP, button, page
from ui import widgets


def _shared(monkeypatch, **env: str) -> None:
    monkeypatch.setenv("ASC_SHARED", "1")
    for name in ("ASC_ALLOWED_MODELS", "ASC_ALLOW_REMOTE_CODE", "ASC_DATA_ROOTS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)


# ------------------------------------------------------------------------------------------------ policy


@pytest.mark.parametrize("address, loopback", [
    ("127.0.0.1", True), ("127.8.9.1", True), ("localhost", True), ("LOCALHOST", True), ("::1", True),
    ("[::1]", True), ("", False), ("0.0.0.0", False), ("::", False), ("192.168.1.20", False),
    ("lab.example.org", False), ("localhost.evil.org", False),
])
def test_is_loopback(address, loopback):
    from asc.access import is_loopback

    assert is_loopback(address) is loopback


@pytest.mark.parametrize("address, study, override, shared", [
    ("127.0.0.1", False, None, False),
    ("localhost", False, None, False),
    ("", False, None, True),  # Streamlit's default listens on every interface
    ("0.0.0.0", False, None, True),
    ("127.0.0.1", True, None, True),  # a user study is for others
    ("0.0.0.0", False, "0", False),
    ("127.0.0.1", False, "1", True),
])
def test_shared_mode_follows_the_address_the_study_and_asc_shared(monkeypatch, address, study, override, shared):
    from asc.access import AccessPolicy

    monkeypatch.delenv("ASC_SHARED", raising=False)
    if override is not None:
        monkeypatch.setenv("ASC_SHARED", override)
    assert AccessPolicy.from_environment(address, study).shared is shared


def test_the_admin_variables_are_read_in_asc_paths(monkeypatch, tmp_path):
    from asc import paths
    from asc.access import AccessPolicy

    for name in ("ASC_ALLOWED_MODELS", "ASC_ALLOW_REMOTE_CODE", "ASC_PASSWORD", "ASC_SHARED", "ASC_DATA_ROOTS"):
        monkeypatch.delenv(name, raising=False)
    assert paths.allowed_models() == () and not paths.allow_remote_code() and paths.app_password() == ""
    assert paths.shared_override() is None and paths.data_roots() is None
    monkeypatch.setenv("ASC_ALLOWED_MODELS", " org/a, ,org/b ")
    monkeypatch.setenv("ASC_ALLOW_REMOTE_CODE", "1")
    monkeypatch.setenv("ASC_PASSWORD", "pw")
    monkeypatch.setenv("ASC_DATA_ROOTS", str(tmp_path))
    assert paths.allowed_models() == ("org/a", "org/b") and paths.allow_remote_code() and paths.app_password() == "pw"
    assert paths.data_roots() == [tmp_path]
    for value, expected in (("1", True), ("yes", True), ("0", False), ("false", False), ("maybe", None)):
        monkeypatch.setenv("ASC_SHARED", value)
        assert paths.shared_override() is expected
    monkeypatch.setenv("ASC_SHARED", "1")
    monkeypatch.delenv("ASC_MODEL", raising=False)
    policy = AccessPolicy.from_environment("127.0.0.1", False)
    assert policy == AccessPolicy(shared=True, allowed_models=("org/a", "org/b"), allow_remote_code=True,
                                  data_roots=(tmp_path,))
    monkeypatch.setenv("ASC_MODEL", "org/admins-choice")  # the model the admin starts the app on is allowed
    assert AccessPolicy.from_environment("", False).allowed_models == ("org/a", "org/b", "org/admins-choice")


def test_a_shared_server_loads_embedded_and_allowed_models_only(tmp_path):
    from asc.access import AccessPolicy

    policy = AccessPolicy(shared=True, allowed_models=("org/allowed",), allow_remote_code=False, data_roots=None)
    policy.check_model("tiny-random")
    policy.check_model("org/allowed")
    messages = []
    for spec in ("org/other", "/", str(tmp_path), str(tmp_path / "missing"), "~/models", "../runs"):
        with pytest.raises(InputError, match="ASC_ALLOWED_MODELS") as err:
            policy.check_model(spec)
        messages.append(str(err.value).replace(spec, "SPEC"))
    assert len(set(messages)) == 1, "the message must not depend on what exists on the server"
    local = AccessPolicy(shared=False, allowed_models=None, allow_remote_code=False, data_roots=None)
    for spec in ("org/other", str(tmp_path), "/anything"):
        local.check_model(spec)


def test_remote_code_needs_the_admins_consent_on_a_shared_server():
    from asc.access import AccessPolicy

    shared = AccessPolicy(shared=True, allowed_models=None, allow_remote_code=False, data_roots=None)
    shared.check_remote_code(False)
    with pytest.raises(InputError, match="ASC_ALLOW_REMOTE_CODE"):
        shared.check_remote_code(True)
    AccessPolicy(shared=True, allowed_models=None, allow_remote_code=True, data_roots=None).check_remote_code(True)
    AccessPolicy(shared=False, allowed_models=None, allow_remote_code=False, data_roots=None).check_remote_code(True)


def test_corpus_paths_stay_under_the_data_roots(tmp_path):
    from asc.access import AccessPolicy
    from asc.errors import AscError

    root = tmp_path / "data"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "c.jsonl").write_text("")
    secret = tmp_path / "secret"
    secret.mkdir()
    (root / "link").symlink_to(secret)
    none = AccessPolicy(shared=True, allowed_models=None, allow_remote_code=False, data_roots=None)
    none.check_corpus("humaneval")
    with pytest.raises(AscError, match="ASC_DATA_ROOTS"):
        none.check_corpus(str(root / "sub"))
    rooted = AccessPolicy(shared=True, allowed_models=None, allow_remote_code=False, data_roots=(root,))
    rooted.check_corpus("stdlib")
    rooted.check_corpus(str(root / "sub"))
    rooted.check_corpus(str(root / "sub" / "c.jsonl"))
    rooted.check_corpus(str(root))
    for spec in (str(secret), str(root / "sub" / ".." / ".." / "secret"), str(root / "link"), "/etc/passwd",
                 str(tmp_path / "data-other")):
        with pytest.raises(AscError, match="ASC_DATA_ROOTS"):
            rooted.check_corpus(spec)
    with pytest.raises(AscError, match="empty"):
        rooted.check_corpus("")
    AccessPolicy(shared=False, allowed_models=None, allow_remote_code=False, data_roots=None).check_corpus("/etc")


# ------------------------------------------------------------------------------------------------ sidebar and pickers


def test_the_shared_sidebar_has_no_free_text_model_and_no_remote_code(monkeypatch):
    _shared(monkeypatch)
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert not at.exception
    choice = at.sidebar.selectbox(key="model_choice")
    assert widgets.OTHER not in choice.options and "tiny-random" in choice.options
    assert not [w for w in at.sidebar.text_input if w.key == "model_other"]
    assert not [w for w in at.sidebar.checkbox if w.key == "trust_remote_code"]


def test_the_admin_can_allow_more_models_and_remote_code(monkeypatch):
    _shared(monkeypatch, ASC_ALLOWED_MODELS="org/extra", ASC_ALLOW_REMOTE_CODE="1")
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert "org/extra" in at.sidebar.selectbox(key="model_choice").options
    assert [w for w in at.sidebar.checkbox if w.key == "trust_remote_code"]


def test_local_mode_keeps_the_free_text_model(monkeypatch):
    monkeypatch.setenv("ASC_SHARED", "0")
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    at = AppTest.from_file(APP, default_timeout=120)
    at.run()
    assert widgets.OTHER in at.sidebar.selectbox(key="model_choice").options
    assert [w for w in at.sidebar.checkbox if w.key == "trust_remote_code"]


def test_shared_model_pickers_offer_no_text_field(monkeypatch, tmp_path):
    _shared(monkeypatch, ASC_ALLOWED_MODELS="org/extra")
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path))
    for name, prefix in (("compare", "cmp"), ("global_eval", "run"), ("probing", "lp"), ("attention", "at"),
                         ("gluecode", "gc"), ("blanca", "bl")):
        at = AppTest.from_file(page(name), default_timeout=120)
        at.run()
        assert not at.exception, name
        assert not [w for w in at.text_input if w.key == f"{prefix}_other"], name
        assert "org/extra" in at.multiselect(key=f"{prefix}_models").options, name


def test_a_typed_path_never_reaches_the_loader_on_a_shared_server(monkeypatch, tmp_path):
    from ui import guards

    _shared(monkeypatch)
    loads: list[str] = []
    monkeypatch.setattr(guards, "get_bundle", lambda spec, trust=False: loads.append(spec))
    errors = []
    for spec in (str(tmp_path), str(tmp_path / "missing")):
        at = AppTest.from_file(page("inspect"), default_timeout=120)
        at.session_state["settings"] = widgets.Settings(model=spec, trust_remote_code=False, language="python",
                                                        aggregate="median")
        at.run()
        button(at, "Explain").click().run()
        assert not at.exception
        errors.append([e.value.replace(widgets.plain(spec), "SPEC").replace(spec, "SPEC") for e in at.error])
    assert loads == []
    assert errors[0] and errors[0] == errors[1], "the page must not tell an existing folder from a missing one"
    assert "ASC\\_ALLOWED\\_MODELS" in errors[0][0] or "ASC_ALLOWED_MODELS" in errors[0][0]


def test_remote_code_is_refused_on_a_shared_server(monkeypatch):
    from ui import guards

    _shared(monkeypatch)
    loads: list[tuple] = []
    monkeypatch.setattr(guards, "get_bundle", lambda spec, trust=False: loads.append((spec, trust)))
    at = AppTest.from_file(page("inspect"), default_timeout=120)
    at.session_state["settings"] = widgets.Settings(model="tiny-random", trust_remote_code=True, language="python",
                                                    aggregate="median")
    at.run()
    button(at, "Explain").click().run()
    assert loads == [] and at.error


# ------------------------------------------------------------------------------------------------ corpus paths


def _corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "c.jsonl"
    path.write_text("\n".join(json.dumps({"id": f"s{i}", "code": f"def f{i}(x):\n    return [x, {i}]\n"})
                              for i in range(3)))
    return path


def _jobs() -> int:
    from ui import jobs

    return len(jobs.job_queue().jobs())


def test_an_empty_corpus_path_submits_nothing(monkeypatch, tmp_path):
    monkeypatch.setenv("ASC_SHARED", "0")
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_file(page("global_eval"), default_timeout=120)
    at.run()
    at.selectbox(key="run_corpus").set_value("a folder, .py/.java or .jsonl path").run()
    before = _jobs()
    button(at, "Start").click().run()
    assert at.error and _jobs() == before


def test_a_shared_server_offers_no_corpus_path_without_data_roots(monkeypatch, tmp_path):
    _shared(monkeypatch)
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    for name, key in (("global_eval", "run_corpus"), ("attention", "at_corpus")):
        at = AppTest.from_file(page(name), default_timeout=120)
        at.run()
        options = at.selectbox(key=key).options
        assert options == ["humaneval", "algorithms", "stdlib"], (name, options)


@pytest.mark.parametrize("name, key", [("global_eval", "run"), ("attention", "at")])
def test_corpus_paths_outside_the_data_roots_are_refused(monkeypatch, tmp_path, name, key):
    from ui import jobs

    root = tmp_path / "data"
    inside = _corpus(root)
    outside = _corpus(tmp_path / "private")
    _shared(monkeypatch, ASC_DATA_ROOTS=str(root))
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_file(page(name), default_timeout=120)
    at.run()
    choice = at.selectbox(key=f"{key}_corpus")
    choice.set_value(next(o for o in choice.options if "path" in o)).run()
    for spec in (str(outside), str(root / ".." / "private" / "c.jsonl"), "/etc/passwd"):
        before = _jobs()
        at.text_input(key=f"{key}_corpus_path").set_value(spec).run()
        button(at, "Start").click().run()
        assert at.error and _jobs() == before, spec
    at.text_input(key=f"{key}_corpus_path").set_value(str(inside)).run()
    button(at, "Start").click().run()
    assert not at.error and _jobs() == before + 1
    assert jobs.job_queue().wait(180)


# ------------------------------------------------------------------------------------------------ Makefile


def _make(*args: str) -> str:
    out = subprocess.run(["make", "-n", *args], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_make_app_serves_on_localhost_unless_told():
    assert "--server.address 127.0.0.1" in _make("app")
    assert "--server.address 10.0.0.5" in _make("app", "HOST=10.0.0.5")
    assert "--server.address 0.0.0.0" in _make("study")


# ------------------------------------------------------------------------------------------------ defence in depth
def _secret_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "secret"
    folder.mkdir()
    (folder / "keys.py").write_text("def key():\n    token = 'hunter2'\n    other = token * 2\n    third = other\n"
                                    "    fourth = third\n    return fourth\n")
    return folder


def test_a_forged_eval_job_cannot_read_outside_the_shared_roots(tmp_path):
    """A submission that skipped the page's check is refused by the queue itself (roots=(): built-ins only)."""
    from asc.jobs import JobQueue
    from tests.support.models import tiny_random_model

    queue = JobQueue(lambda spec: tiny_random_model(), roots=lambda: ())
    job = queue.submit("tiny-random", str(_secret_folder(tmp_path)), None, tmp_path / "runs")
    assert queue.wait(60)
    assert job.status == "failed" and "secret" in job.error
    assert not any((tmp_path / "runs").glob("*/meta.json"))


@pytest.mark.parametrize("kind", ["layers", "attention"])
def test_forged_probe_jobs_cannot_read_outside_the_shared_roots(tmp_path, kind):
    from asc.errors import AscError
    from probes.catalog import layer_job
    from probes.codesyntax.attention import attention_job
    from tests.support.models import tiny_random_model

    corpus = str(_secret_folder(tmp_path))
    call = (layer_job(["KTX"], tmp_path / "out", corpus=corpus, size=20, roots=())
            if kind == "layers" else attention_job(corpus, tmp_path / "out", limit=5, roots=()))
    with pytest.raises(AscError, match="secret|allowed|roots|folder"):
        call(tiny_random_model(), lambda *a: None, lambda: False)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").rglob("*.json"))


def test_the_shared_policy_confines_every_corpus_load(monkeypatch, tmp_path):
    from asc.access import AccessPolicy

    _shared(monkeypatch)
    assert AccessPolicy.from_environment("0.0.0.0", False).corpus_roots == ()
    _shared(monkeypatch, ASC_DATA_ROOTS=str(tmp_path))
    assert AccessPolicy.from_environment("0.0.0.0", False).corpus_roots == (tmp_path,)
    monkeypatch.setenv("ASC_SHARED", "0")
    monkeypatch.delenv("ASC_DATA_ROOTS")
    assert AccessPolicy.from_environment("127.0.0.1", False).corpus_roots is None


@pytest.mark.parametrize("shared, submitted", [("0", True), ("1", False)])
def test_the_sidebars_remote_code_choice_reaches_jobs_only_where_allowed(monkeypatch, tmp_path, shared, submitted):
    """Jobs started from a page follow the sidebar's "Trust remote code"; a shared server refuses it."""
    from ui import jobs

    monkeypatch.setenv("ASC_SHARED", shared)
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path / "runs"))
    at = AppTest.from_file(page("global_eval"), default_timeout=120)
    at.session_state["settings"] = widgets.Settings(model="tiny-random", trust_remote_code=True, language="python",
                                                    aggregate="median")
    at.run()
    before = len(jobs.job_queue().jobs())
    button(at, "Start").click().run()
    new = jobs.job_queue().jobs()[before:]
    if submitted:
        assert [j.trust_remote_code for j in new] == [True] and not at.error
    else:
        assert new == [] and "remote code" in at.error[0].value
    jobs.job_queue().wait(120)
