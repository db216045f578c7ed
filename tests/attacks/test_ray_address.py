"""Which Ray cluster the app's job queue joins, and what a cluster that does not answer costs the queue.

With ``ASC_RAY_ADDRESS=auto`` Ray joins the cluster named in ``<tmp>/ray/ray_current_cluster``, and ``/tmp/ray`` is
writable by every user of the machine: a file planted there chose the cluster, and the job then hung "running"
for minutes while the queue (one job at a time, for everybody) waited. Now:

* a shared server refuses ``auto`` before any connection, naming the fix (the cluster's explicit address);
* an explicit address must answer within ``CONNECT_TIMEOUT_S``: a port where nothing listens, or a socket that
  accepts and never answers, fails the job with one line, before its run folder exists, and the next job runs;
* a local ``auto`` is looked up once and the address found is checked the same way;
* the CLI's default (no address) starts a Ray of its own: it never reads the cluster file.

The planted file lives in a temporary ``RAY_TMPDIR`` (where Ray looks for it), pointing at a socket these tests
hold: one that accepts connections and never says a word.
"""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

import pytest

from asc.corpus import engines
from asc.errors import CorpusError
from asc.jobs import JobKind, JobQueue

TIMEOUT = 1.0  # the probe's time limit in these tests (the module's default is 20 s)


class SilentServer:
    """A TCP server on 127.0.0.1 that accepts connections, counts them, and never sends a byte."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:  # closed
                return
            self.accepted.append(conn)

    def close(self) -> None:
        self.sock.close()
        for conn in self.accepted:
            conn.close()


@pytest.fixture(autouse=True)
def no_ray_running():
    """No Ray running in this process: the corpus tests share one per worker (tests/asc/corpus/conftest.py), and
    the engine reuses a running Ray instead of looking its address up, which these tests check (in a CI run the
    job went on to load its model and failed on that instead)."""
    ray = sys.modules.get("ray")
    if ray is not None and ray.is_initialized():
        ray.shutdown()


@pytest.fixture
def silent():
    server = SilentServer()
    yield server
    server.close()


@pytest.fixture
def closed_port() -> int:
    """A port on 127.0.0.1 where nothing listens (bound once, then released)."""
    with socket.create_server(("127.0.0.1", 0)) as sock:
        return sock.getsockname()[1]


def _plant(monkeypatch, tmp_path: Path, address: str) -> None:
    """Another user's ``ray_current_cluster``, in the temp folder Ray reads it from."""
    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text(address)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)


def _queue(shared: bool, ran: list) -> JobQueue:
    def load(spec, **kwargs):
        ran.append(spec)
        return f"bundle of {spec}"

    return JobQueue(load, shared=lambda: shared)


def _then(queue: JobQueue, tmp_path: Path, ran: list):
    """A second job, queued behind the Ray one: it must run once the first gives up."""
    return queue.submit_call(JobKind.LAYERS, "next-model", "next", tmp_path / "next", lambda b, p, s: ran.append(b))


def test_a_shared_app_refuses_auto_before_connecting_and_runs_the_next_job(monkeypatch, tmp_path, silent):
    from ui import jobs

    _plant(monkeypatch, tmp_path, f"127.0.0.1:{silent.port}")
    monkeypatch.setenv("ASC_SHARED", "1")
    monkeypatch.setenv("ASC_RAY_ADDRESS", "auto")
    queue = jobs.job_queue()  # the app's own queue, wired to the server's policy
    ran: list = []
    job = queue.submit("tiny-random", "humaneval", 2, tmp_path / "runs", owner="ray-test")
    after = queue.submit_call(JobKind.LAYERS, "tiny-random", "next", tmp_path / "next",
                              lambda b, p, s: ran.append("next"), owner="ray-test")
    assert queue.wait(120), "the queue is stuck behind the Ray job"
    assert job.status == "failed" and job.engine == "ray"
    assert "ASC_RAY_ADDRESS=auto is refused on a shared server" in job.error
    assert "HOST:6379" in job.error and "ray://HOST:10001" in job.error and "\n" not in job.error
    assert silent.accepted == []  # refused before any connection
    assert not job.out.exists()
    assert after.status == "done" and ran == ["next"]


@pytest.mark.parametrize("listening", [True, False], ids=["silent socket", "nothing listening"])
def test_an_address_that_does_not_answer_fails_its_job_in_time_and_frees_the_queue(monkeypatch, tmp_path, silent,
                                                                                    closed_port, listening):
    port = silent.port if listening else closed_port
    monkeypatch.setattr(engines, "CONNECT_TIMEOUT_S", TIMEOUT, raising=False)
    monkeypatch.setenv("ASC_RAY_ADDRESS", f"127.0.0.1:{port}")
    ran: list = []
    queue = _queue(True, ran)
    job = queue.submit("m", "humaneval", 2, tmp_path / "runs")
    after = _then(queue, tmp_path, ran)
    assert queue.wait(60), "the queue is stuck behind the Ray job"
    assert job.status == "failed" and job.engine == "ray" and "\n" not in job.error
    expected = f"did not answer within {TIMEOUT:g} s" if listening else "cannot be reached"
    assert f"the Ray cluster at 127.0.0.1:{port} {expected}" in job.error, job.error
    assert "ray status" in job.error
    assert job.elapsed < 30  # the probe's limit, not Ray's minutes of retries
    assert not job.out.exists()  # checked before the run folder is made
    assert after.status == "done" and ran == ["next-model", "bundle of next-model"]
    assert len(silent.accepted) == (1 if listening else 0)


@pytest.mark.slow  # imports Ray to look the address up (a few seconds)
def test_a_local_auto_is_looked_up_once_and_checked_in_time(monkeypatch, tmp_path, silent):
    pytest.importorskip("ray")
    _plant(monkeypatch, tmp_path, f"127.0.0.1:{silent.port}")
    # auto prefers the planted file, but a Ray another test started on this machine meanwhile (other xdist worker)
    # is found by its running GCS: hide those, the file is what this test is about
    from ray._private import services

    monkeypatch.setattr(services, "find_gcs_addresses", lambda: [])
    monkeypatch.setattr(engines, "CONNECT_TIMEOUT_S", TIMEOUT, raising=False)
    monkeypatch.setenv("ASC_RAY_ADDRESS", "auto")
    ran: list = []
    queue = _queue(False, ran)
    job = queue.submit("m", "humaneval", 2, tmp_path / "runs")
    after = _then(queue, tmp_path, ran)
    assert queue.wait(60), "the queue is stuck behind the Ray job"
    # Ray reads 127.0.0.1 as this node's address: the silent socket or a closed port answers, both within the limit
    assert job.status == "failed" and "the Ray cluster at " in job.error and f":{silent.port} " in job.error
    assert job.elapsed < 30 and after.status == "done"


def test_the_cli_default_starts_its_own_ray_and_never_reads_the_cluster_file(monkeypatch, tmp_path, silent):
    import sys
    import types

    _plant(monkeypatch, tmp_path, f"127.0.0.1:{silent.port}")
    seen = []

    def init(address=None, **kwargs):
        seen.append(address)
        raise RuntimeError("stop here")

    fake = types.SimpleNamespace(is_initialized=lambda: False, init=init, shutdown=lambda: None)
    monkeypatch.setitem(sys.modules, "ray", fake)
    from asc.corpus.sources import Snippet

    with pytest.raises(RuntimeError, match="stop here"):
        engines.run_corpus_ray("m", [Snippet("a", "def f():\n    return 1\n")], tmp_path / "out", progress=False)
    assert seen == ["local"]  # ray.init(address=None) would read ray_current_cluster and join that cluster
    assert silent.accepted == []


@pytest.mark.parametrize("address", ["head", "head:", "head:99999", "http://head:6379", "ray://", "a b:1"])
def test_an_address_that_is_no_address_is_refused_naming_the_forms(address):
    with pytest.raises(CorpusError, match=r"give HOST:6379 \(the head's GCS port\) or ray://HOST:10001"):
        engines.resolve_address(address)


def test_explicit_addresses_pass_through_and_none_means_a_local_ray():
    for address in ("10.0.0.5:6379", "ray://head.lab:10001", " [::1]:6379 "):
        assert engines.resolve_address(address) == address.strip()
    assert engines.resolve_address(None) == engines.resolve_address("") == engines.resolve_address("local") == "local"


@pytest.mark.parametrize("address", ["auto", "AUTO ", "local"])
def test_a_shared_server_refuses_addresses_another_user_can_steer(address):
    with pytest.raises(CorpusError, match="refused on a shared server"):
        engines.check_shared_address(address)
    engines.check_shared_address("10.0.0.5:6379")  # an explicit cluster address is the admin's choice


def test_a_cluster_that_refuses_ray_init_is_named_as_the_cluster_not_as_a_file(monkeypatch, tmp_path):
    import sys
    import types

    def init(address=None, **kwargs):
        raise ConnectionError(f"failed to connect to ray cluster at {address}")

    fake = types.SimpleNamespace(is_initialized=lambda: False, init=init, shutdown=lambda: None)
    monkeypatch.setitem(sys.modules, "ray", fake)
    with pytest.raises(CorpusError, match=r"^the Ray cluster at local cannot be reached \(failed to connect") as err:
        engines._start_ray("local", progress=False)
    assert "ray status" in str(err.value) and "\n" not in str(err.value)
