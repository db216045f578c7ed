"""asc.jobs: the background queue (one job at a time), its kinds, cancellation and failures."""

import json
import logging
import threading

import pytest

from asc.corpus import load_run
from asc.errors import InputError
from asc.jobs import JobKind, JobQueue, run_folder


def _queue():
    from tests.support.models import tiny_random_model

    return JobQueue(lambda spec: tiny_random_model())


@pytest.mark.slow
def test_job_queue_runs_in_background_and_resumes(tmp_path, monkeypatch):
    from tests.support.models import tiny_random_model

    corpus = tmp_path / "c.jsonl"
    corpus.write_text("\n".join(json.dumps({"id": f"s{i}", "code": f"def f{i}(x):\n    return x + {i}\n"})
                                for i in range(6)))
    queue = JobQueue(lambda spec: tiny_random_model())
    job = queue.submit("tiny-random", str(corpus), None, tmp_path / "runs", batch_size=2)
    assert queue.wait(120) and job.status == "done" and job.done == job.total == 6
    assert job.out == run_folder(tmp_path / "runs", "tiny-random", str(corpus), None)
    assert len(load_run(job.out).snippets) == 6
    bad = queue.submit("tiny-random", str(tmp_path / "missing-corpus"), None, tmp_path / "runs")
    assert queue.wait(60) and bad.status == "failed" and "unknown corpus" in bad.error
    cancelled = queue.submit("tiny-random", str(corpus), 3, tmp_path / "runs")
    cancelled.cancel.set()
    assert queue.wait(60) and cancelled.status == "cancelled"


def test_jobs_are_listed_by_kind_in_submission_order(tmp_path):
    queue = _queue()
    noop = lambda bundle, progress, stop: None  # noqa: E731
    a = queue.submit_call(JobKind.LAYERS, "tiny-random", "layers a", tmp_path / "a", noop)
    b = queue.submit_call("attention", "tiny-random", "heads", tmp_path / "b", noop)  # a kind's value works too
    c = queue.submit_call(JobKind.LAYERS, "tiny-random", "layers c", tmp_path / "c", noop)
    assert queue.wait(60)
    assert queue.jobs() == [a, b, c] and [j.id for j in queue.jobs()] == [1, 2, 3]
    assert queue.jobs(JobKind.LAYERS) == [a, c]
    assert queue.jobs(JobKind.ATTENTION) == [b] and b.kind is JobKind.ATTENTION
    assert queue.jobs(JobKind.EVAL) == []
    assert all(j.status == "done" and j.finished >= j.started for j in (a, b, c))
    with pytest.raises(ValueError):
        queue.submit_call("training", "tiny-random", "nope", tmp_path / "d", noop)


def test_a_job_cancelled_before_it_starts_never_runs(tmp_path):
    queue = _queue()
    release, started, ran = threading.Event(), threading.Event(), []

    def blocking(bundle, progress, stop):
        started.set()
        release.wait(30)

    first = queue.submit_call(JobKind.LAYERS, "tiny-random", "first", tmp_path / "1", blocking)
    assert started.wait(30)  # the worker is busy with the first job
    second = queue.submit_call(JobKind.LAYERS, "tiny-random", "second", tmp_path / "2",
                               lambda bundle, progress, stop: ran.append(True))
    assert second.status == "queued" and second.active
    second.cancel.set()
    release.set()
    assert queue.wait(60)
    assert first.status == "done"
    assert second.status == "cancelled" and not second.active and second.started is None and ran == []
    assert second.elapsed == 0.0


def test_a_running_call_that_sees_the_stop_request_ends_cancelled(tmp_path):
    queue = _queue()
    steps, submitted = [], threading.Event()

    def call(bundle, progress, stop):
        assert submitted.wait(30)  # `job` below is bound
        for i in range(100):
            if stop():
                return
            progress("work", i + 1, 100)
            steps.append(i)
            if i == 2:
                job.cancel.set()

    job = queue.submit_call(JobKind.ATTENTION, "tiny-random", "stoppable", tmp_path / "o", call)
    submitted.set()
    assert queue.wait(60)
    assert job.status == "cancelled" and steps == [0, 1, 2]
    assert (job.stage, job.done, job.total) == ("work", 3, 100)


def test_stop_cancels_the_running_and_queued_jobs_and_waits_for_the_worker(tmp_path):
    """What a stopping server does (Ctrl-C): the running job ends at its next check, the queued ones never start."""
    queue = _queue()
    started = threading.Event()

    def endless(bundle, progress, stop):
        started.set()
        while not stop():
            progress("work", 1, 2)
            threading.Event().wait(0.01)

    running = queue.submit_call(JobKind.ATTENTION, "tiny-random", "endless", tmp_path / "a", endless)
    waiting = queue.submit_call(JobKind.ATTENTION, "tiny-random", "next", tmp_path / "b", endless)
    assert started.wait(60)
    assert queue.stop(timeout=30)
    assert running.status == "cancelled" and waiting.status == "cancelled"


def test_stop_without_jobs_returns_at_once():
    assert _queue().stop(timeout=0.01)


def test_user_errors_fail_the_job_with_their_message_and_crashes_are_logged(tmp_path, caplog):
    queue = _queue()

    def user_error(bundle, progress, stop):
        raise InputError("task XYZ is unknown: choose from KTX")

    def crash(bundle, progress, stop):
        raise KeyError("boom")

    with caplog.at_level(logging.ERROR, logger="asc.jobs"):
        mistake = queue.submit_call(JobKind.LAYERS, "tiny-random", "mistake", tmp_path / "m", user_error)
        assert queue.wait(60)
        assert mistake.status == "failed" and mistake.error == "task XYZ is unknown: choose from KTX"
        assert not [r for r in caplog.records if r.name == "asc.jobs"]  # a user mistake is no crash
        broken = queue.submit_call(JobKind.LAYERS, "tiny-random", "broken", tmp_path / "b", crash)
        assert queue.wait(60)
    assert broken.status == "failed" and broken.error == "KeyError: 'boom'"
    logged = [r for r in caplog.records if r.name == "asc.jobs"]
    assert [r.getMessage() for r in logged] == [f"corpus run {broken.id} failed"]
    assert logged[0].exc_info is not None  # with its traceback
    # the worker survived both: a later job still runs
    after = queue.submit_call(JobKind.LAYERS, "tiny-random", "after", tmp_path / "a", lambda b, p, s: None)
    assert queue.wait(60) and after.status == "done"


def test_a_model_that_cannot_be_loaded_fails_the_job(tmp_path):
    from asc.models import load_model

    queue = JobQueue(load_model)
    job = queue.submit_call(JobKind.LAYERS, "no-such-model-xyz", "layers", tmp_path / "o", lambda b, p, s: None)
    assert queue.wait(60)
    assert job.status == "failed" and "unknown model 'no-such-model-xyz'" in job.error


def _recording_queue(calls):
    """A queue whose loader records what each load was asked for (and loads nothing)."""
    def load(spec, **kwargs):
        calls.append((spec, kwargs))
        return f"bundle of {spec}"

    return JobQueue(load)


def test_a_job_records_its_device_and_dtype_and_passes_them_to_the_loader(tmp_path):
    calls, seen = [], []
    queue = _recording_queue(calls)
    job = queue.submit_call(JobKind.LAYERS, "m", "probes", tmp_path / "o", lambda b, p, s: seen.append(b),
                            device=" CUDA:1 ", dtype="BFloat16")
    assert (job.device, job.dtype) == ("cuda:1", "bfloat16")  # normalised as --device/--dtype read them
    plain = queue.submit_call(JobKind.LAYERS, "m", "probes", tmp_path / "o", lambda b, p, s: None)
    trusted = queue.submit_call(JobKind.ATTENTION, "m", "heads", tmp_path / "o", lambda b, p, s: None,
                                trust_remote_code=True, device="cpu")
    assert queue.wait(60) and all(j.status == "done" for j in (job, plain, trusted))
    assert seen == ["bundle of m"]
    assert calls == [("m", {"device": "cuda:1", "dtype": "bfloat16"}),
                     ("m", {}),  # no placement named: one-argument loaders keep working
                     ("m", {"trust_remote_code": True, "device": "cpu"})]


def test_an_eval_job_loads_its_model_on_its_device_and_dtype(tmp_path, monkeypatch):
    from asc import jobs

    calls, runs = [], []
    monkeypatch.delenv("ASC_RAY_ADDRESS", raising=False)
    monkeypatch.setattr(jobs, "run_corpus", lambda bundle, snippets, out, **kw: runs.append((bundle, len(snippets))))
    queue = _recording_queue(calls)
    job = queue.submit("m", "humaneval", 3, tmp_path / "runs", device="cpu", dtype="float16")
    assert queue.wait(60) and job.status == "done" and job.engine == "local"
    assert calls == [("m", {"device": "cpu", "dtype": "float16"})] and runs == [("bundle of m", 3)]


@pytest.mark.parametrize(("placement", "message"), [
    ({"device": "gpu"}, "unknown device 'gpu': choose one of auto, cpu, cuda, cuda:N, mps"),
    ({"device": "cuda:x"}, "unknown device 'cuda:x'"),
    ({"dtype": "fp8"}, "unknown dtype 'fp8': choose one of auto, float32, bfloat16, float16"),
])
def test_an_invalid_device_or_dtype_is_refused_when_submitted(tmp_path, placement, message):
    calls = []
    queue = _recording_queue(calls)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        queue.submit("m", "humaneval", 3, tmp_path / "runs", **placement)
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        queue.submit_call(JobKind.LAYERS, "m", "probes", tmp_path / "o", lambda b, p, s: None, **placement)
    assert queue.jobs() == [] and calls == []  # nothing was queued


def test_eval_jobs_run_on_the_ray_cluster_named_by_asc_ray_address(tmp_path, monkeypatch):
    from asc import jobs
    from asc.corpus import engines

    calls, seen, local = [], [], []

    def fake_ray(spec, snippets, out, **kw):  # reports progress as the driver does after each part it writes
        seen.append({"spec": spec, "n": len(snippets), "out": out} | kw)
        for done in (2, len(snippets)):
            kw["on_progress"](done, len(snippets))
        return out

    monkeypatch.setattr(engines, "run_corpus_ray", fake_ray)
    monkeypatch.setattr(jobs, "run_corpus", lambda bundle, snippets, out, **kw: local.append(bundle))
    monkeypatch.setenv("ASC_RAY_ADDRESS", "ray://head:10001")
    queue = _recording_queue(calls)
    job = queue.submit("m", "humaneval", 3, tmp_path / "runs", batch_size=2, trust_remote_code=True,
                       device="cuda", dtype="bfloat16")
    default = queue.submit("m", "humaneval", 3, tmp_path / "runs")
    assert queue.wait(60) and job.status == default.status == "done"
    assert job.engine == default.engine == "ray" and (job.done, job.total) == (3, 3)
    assert calls == [] and local == []  # the actors load the model, not this process
    first = seen[0]
    assert (first["spec"], first["n"], first["out"]) == ("m", 3, job.out)
    assert first["address"] == "ray://head:10001" and first["trust_remote_code"] is True
    assert (first["device"], first["dtype"], first["batch_size"]) == ("cuda", "bfloat16", 2)
    assert first["corpus"] == "humaneval" and first["progress"] is False
    assert (seen[1]["device"], seen[1]["dtype"]) == ("auto", "auto")  # as --engine ray picks by default

    monkeypatch.delenv("ASC_RAY_ADDRESS")
    here = queue.submit("m", "humaneval", 3, tmp_path / "runs")
    assert queue.wait(60) and here.status == "done" and here.engine == "local"
    assert len(seen) == 2 and local == ["bundle of m"] and calls == [("m", {})]


def test_a_failure_on_the_ray_cluster_fails_the_job_with_its_message(tmp_path, monkeypatch):
    from asc.corpus import engines
    from asc.errors import CorpusError

    def fake_ray(spec, snippets, out, **kw):
        raise CorpusError("the Ray actors failed: no GPU; run with --debug for the traceback")

    monkeypatch.setattr(engines, "run_corpus_ray", fake_ray)
    monkeypatch.setenv("ASC_RAY_ADDRESS", "auto")
    queue = _recording_queue([])
    job = queue.submit("m", "humaneval", 3, tmp_path / "runs")
    assert queue.wait(60) and job.status == "failed" and job.engine == "ray"
    assert job.error == "the Ray actors failed: no GPU; run with --debug for the traceback"
