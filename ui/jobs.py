"""The app-wide background queue and the progress panel pages show for their own kind of job.

Jobs belong to the browser tab that submitted them (:func:`owner`): a tab's panel lists and cancels its own
jobs, and their text (model ids, corpus specs, errors: what users typed) is shown as plain text; other tabs' jobs
of the same kind show while queued or running, read only and without their text (a new tab sees the demo another
tab started, and where its own job stands in the one-at-a-time queue).
Finished results are run folders, which every tab may read. When one of this tab's jobs finishes, its
panel reruns the whole page, so the page shows the new results without a click.

The one-click demos (:func:`demo_button`, defined here and nowhere else) give a fresh install results on
every page within the minutes their button states (:data:`DEMO_MINUTES`): a small run of the page's own kind
through the same queue, on :func:`asc.paths.default_model` (``$ASC_MODEL``: the tests' tiny random model).
"""

from __future__ import annotations

import atexit
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

import streamlit as st

from asc.jobs import Job, JobKind, JobQueue
from asc.models import EMBEDDED
from asc.paths import attention_dir, blanca_dir, default_model, gluecode_dir, layers_dir, runs_dir
from probes.blanca.runs import blanca_job
from probes.catalog import layer_job
from probes.codesyntax.attention import attention_job
from probes.gluecode.runs import gluecode_job
from ui import access
from ui.cache import get_job_bundle
from ui.widgets import placement, plain, trust_remote_code

DEMO_CORPUS = "humaneval"  # the eval and attention demos: the first DEMO_LIMIT HumanEval functions
DEMO_LIMIT = 40
PANEL_EVERY = 2.0  # seconds between two refreshes of a page's job panel
STOP_WAIT = 10.0  # seconds a stopping server waits for its running job to end at its next batch
DEMO_TASKS = ("KTX", "IDN")  # the layer demo: two INSPECT tasks of DEMO_SIZE samples built from DEMO_TASK_CORPUS
DEMO_SIZE = 100
DEMO_TASK_CORPUS = "stdlib"
DEMO_GLUECODE = ("algorithms", 24, ("function", "file"))  # the glueCode demo: corpus, items per task (half test), levels
DEMO_BASELINE = "minilm-l6"  # the layer demo's baseline encoder (Table III), where installed
DEMO_BLANCA = ("minilm-l6", ("R", "L", "F", "H", "U"))  # the BLANCA demo: encoder (where installed), stdlib tasks
# what each demo promises, on its button: from its click to its results with SmolLM2 / MiniLM on a 2-core CPU that
# other work keeps busy. Measured through this queue on such a machine (load average 8-10 from other jobs), a fresh
# runs folder: eval 140 s (28 s in chromium at load 1-5), layers 83 s (both models), attention 19 s; BLANCA 347 s as
# issue 29 measured it; glueCode unfinished after 11 min at load 10-20 (its function level done): 15, to be measured.
# tests/e2e/test_fit.py holds the Global demo to its promise in chromium.
DEMO_MINUTES = {JobKind.EVAL: 3, JobKind.ATTENTION: 2, JobKind.LAYERS: 2, JobKind.GLUECODE: 15, JobKind.BLANCA: 6}
DEMO_BUTTON = "Run a small demo"  # every demo button's label starts so (demo_label)


def demo_label(kind: JobKind) -> str:
    """The demo button's label: what it promises (:data:`DEMO_MINUTES`)."""
    return f"{DEMO_BUTTON} (up to {DEMO_MINUTES[kind]} minutes on a 2-core CPU)"


@st.cache_resource(show_spinner=False)
def job_queue() -> JobQueue:
    """The app-wide queue of long runs: they go on while users switch pages or leave. Jobs load their model
    through :func:`ui.cache.get_job_bundle`, apart from the model users inspect, with the job's
    ``trust_remote_code``, device and dtype (pages submit the sidebar's: :func:`ui.widgets.placement`); a shared
    server's policy (:func:`ui.access.policy`) keeps its corpus reads in the data roots and its Ray address explicit."""
    jobs = JobQueue(lambda spec, trust_remote_code=False, device="auto", dtype="auto":
                    get_job_bundle(spec, trust_remote_code, device, dtype),
                    roots=lambda: access.policy().corpus_roots, shared=lambda: access.policy().shared)
    atexit.register(_stop_jobs, jobs)  # the server stops (Ctrl-C): cancel the jobs, let the running one end
    return jobs


def _stop_jobs(jobs: JobQueue) -> None:
    active = [job for job in jobs.jobs() if job.active]
    if not active:
        return
    print(f"  Stopping {len(active)} job(s): a corpus run keeps its finished snippets (run it again to resume)...",
          file=sys.stderr, flush=True)
    if not jobs.stop(STOP_WAIT):
        # ending the interpreter with a thread inside torch aborts it ("terminate called without an active exception",
        # make's Error 250): leave at once instead; every file is written atomically, so only the batch is lost
        print(f"  A job was still running after {STOP_WAIT:.0f} s: stopped without its last batch", file=sys.stderr,
              flush=True)
        os._exit(0)


def owner() -> str:
    """The owner to submit jobs under: this browser tab's token (:func:`ui.access.tab_token`)."""
    return access.tab_token()


def submit(kind: JobKind, model: str, label: str, out: Path, call: Callable[..., None]) -> Job:
    """Queue ``call`` for this tab (:func:`owner`) with the sidebar's remote-code choice, device and dtype: what a
    page's *Start* submits for each chosen model (``label``: what the job panel shows)."""
    return job_queue().submit_call(kind, model, label, out, call, owner=owner(), trust_remote_code=trust_remote_code(),
                                   **placement())


KIND_NAMES = {JobKind.EVAL: "corpus evaluation", JobKind.LAYERS: "layer probes", JobKind.ATTENTION: "attention scores",
              JobKind.GLUECODE: "glueCode tasks", JobKind.BLANCA: "BLANCA tasks"}


def _describe(job: Job) -> str:
    label = f"#{job.id} {job.model}, {job.corpus}: {job.status}"
    if job.status == "running":
        label += f" ({job.stage + ' ' if job.stage else ''}{job.done}/{job.total}, {job.elapsed:.0f} s)"
    return label


def ahead_of(job: Job, every: list[Job]) -> int:
    """How many jobs run before ``job`` (the queue runs one at a time, oldest first): those queued or running that
    were submitted before it, from any tab and of any kind; 0 for a job that is not queued."""
    if job.status != "queued":
        return 0
    return sum(1 for other in every if other.active and other.id < job.id)


def _in_line(job: Job, every: list[Job]) -> str:
    ahead = ahead_of(job, every)
    return f", {ahead} job{'s' if ahead != 1 else ''} ahead of it" if ahead else ""


def _describe_other(job: Job, every: list[Job]) -> str:
    """Another tab's job as this tab sees it: its kind, status and progress, nothing that tab typed."""
    label = f"#{job.id} another tab's {KIND_NAMES.get(job.kind, str(job.kind))}: {job.status}"
    if job.status == "running":
        label += f" ({job.done}/{job.total}, {job.elapsed:.0f} s)"
    return label + _in_line(job, every)


def job_panel(kind: JobKind, describe: Callable[[Job], str] | None = None) -> None:
    """Progress bars of the app's background jobs of ``kind``: this tab's (newest first, at most 6) with a Cancel
    button each, then the queued and running ones of other tabs (at most 6; read only, without what that tab
    typed). A queued job says how many run before it (the queue runs one job at a time, of every kind and tab).

    ``describe(job)`` gives the label of this tab's jobs (default: model, label, status, stage), shown as plain text
    (no Markdown); pages call it through :func:`live_job_panel`, which refreshes it. When a job of ``kind`` that was active
    at the panel's last run has finished (done), the whole page reruns once, to show its results.
    """
    every = job_queue().jobs()
    me = owner()
    mine = [job for job in every if job.kind == kind and job.owner == me]
    others = [job for job in every if job.kind == kind and job.owner != me and job.active]
    seen_key = f"asc_active_jobs_{kind}"
    was_active = st.session_state.get(seen_key, set())
    st.session_state[seen_key] = {job.id for job in mine + others if job.active}
    if any(job.id in was_active and job.status == "done" for job in every if job.kind == kind):
        st.rerun(scope="app")  # from the fragment: the page reads the new results
    for job in reversed(mine[-6:]):
        label = (describe or _describe)(job) + _in_line(job, every)
        if job.status == "done":
            label += f" in {job.elapsed:.0f} s"
        cols = st.columns([6, 1])
        cols[0].progress(min(1.0, job.done / job.total) if job.total else 0.0, text=plain(label))
        if job.error:
            cols[0].error(plain(job.error))
        if job.active and cols[1].button("Cancel", key=f"cancel_{job.id}"):
            job.cancel.set()
    for job in others[:6]:
        st.progress(min(1.0, job.done / job.total) if job.total else 0.0, text=plain(_describe_other(job, every)))


@st.fragment(run_every=PANEL_EVERY)
def _polled_panel(kind: JobKind, describe: Callable[[Job], str] | None = None) -> None:
    job_panel(kind, describe)


def live_job_panel(kind: JobKind, describe: Callable[[Job], str] | None = None) -> None:
    """:func:`job_panel`, the one line a page with background jobs calls. While a job of ``kind`` is queued or runs
    (this tab's or another's), the panel is a fragment refreshed every :data:`PANEL_EVERY` seconds (only the panel
    reruns; the whole page once, when such a job finishes); with none, it is drawn once and nothing polls, so an
    idle tab costs the server nothing. A job another tab starts later shows at this tab's next rerun (any click)."""
    if running(kind):
        _polled_panel(kind, describe)
    else:
        job_panel(kind, describe)


def demo_models(kind: JobKind) -> list[str]:
    """The models a demo of ``kind`` runs: the default model; the layer demo adds the MiniLM baseline
    (:data:`DEMO_BASELINE`) where its weights are installed, and the BLANCA demo runs MiniLM in its place, but
    neither next to a synthetic model (:attr:`asc.models.EmbeddedModel.synthetic`, the tests' tiny random one:
    its demos stay free of real models)."""
    model = default_model()
    synthetic = model in EMBEDDED and EMBEDDED[model].synthetic
    baseline = EMBEDDED[DEMO_BASELINE]
    if kind is JobKind.LAYERS and not synthetic and model != DEMO_BASELINE and baseline.installed():
        return [model, DEMO_BASELINE]
    encoder = DEMO_BLANCA[0]
    if kind is JobKind.BLANCA and not synthetic and EMBEDDED[encoder].installed():
        return [encoder]  # BLANCA embeds text: a sentence encoder in place of the default decoder
    return [model]


def describe_demo(kind: JobKind) -> str:
    """What the demo of ``kind`` computes, in a sentence (models as plain text)."""
    models = " and ".join(demo_models(kind))
    if kind is JobKind.LAYERS:
        return (f"Layer probes of {models} on the INSPECT tasks {' and '.join(DEMO_TASKS)} ({DEMO_SIZE} samples "
                f"each, built from the {DEMO_TASK_CORPUS} corpus).")
    if kind is JobKind.ATTENTION:
        return f"The attention heads of {models} scored on the first {DEMO_LIMIT} HumanEval functions."
    if kind is JobKind.GLUECODE:
        corpus, size, _ = DEMO_GLUECODE
        return (f"The five glueCode tasks answered by {models}: {size} items per task built from the {corpus} "
                "package (the test half answered; NAME by generation only, OPS scored to the end of its line), with "
                "the function and with the whole file.")
    if kind is JobKind.BLANCA:
        return (f"The five BLANCA tasks scored with the embeddings of {models}: built from the Python documentation "
                "and the standard library's classes (about 2,500 texts; the task set built once).")
    return f"AsC-Eval of the first {DEMO_LIMIT} HumanEval functions on {models}."


class _Where(TypedDict):
    """Whose a demo's jobs are and where their models run (the queue's keyword arguments)."""

    owner: str
    device: str | None
    dtype: str | None


def submit_demo(kind: JobKind, queue: JobQueue, owner: str = "", device: str | None = None,
                dtype: str | None = None) -> list[Job]:
    """Queue the demo of ``kind`` on ``queue``: what the page's own *Start* submits, with the demo's settings,
    into the page's usual folders (the eval demo: the conventional run folder of (model, humaneval, 40)), its
    models on ``device`` in ``dtype`` (None: the queue's loader's default)."""
    submitted = []
    where: _Where = {"owner": owner, "device": device, "dtype": dtype}
    for model in demo_models(kind):
        if kind is JobKind.EVAL:
            submitted.append(queue.submit(model, DEMO_CORPUS, DEMO_LIMIT, runs_dir(), **where))
        elif kind is JobKind.LAYERS:
            folder = layers_dir()
            call = layer_job(DEMO_TASKS, folder, corpus=DEMO_TASK_CORPUS, size=DEMO_SIZE,
                             roots=access.policy().corpus_roots)
            submitted.append(queue.submit_call(kind, model, f"layer probes: {', '.join(DEMO_TASKS)}", folder, call,
                                               **where))
        elif kind is JobKind.GLUECODE:
            corpus, size, levels = DEMO_GLUECODE
            folder = gluecode_dir()
            # ranking ten names is the slowest answer, OPS scored to the end of its line costs one pass: a demo's
            call = gluecode_job(("NPATH", "OPS", "NAME", "CALL", "NULL"), corpus, folder, contexts=levels, size=size,
                                name_modes=("generate",), scope={"OPS": "line"})
            submitted.append(queue.submit_call(kind, model, f"glueCode: {corpus} ({size} items per task)", folder, call,
                                               **where))
        elif kind is JobKind.BLANCA:
            folder = blanca_dir()
            tasks = DEMO_BLANCA[1]
            submitted.append(queue.submit_call(kind, model, f"BLANCA: {', '.join(tasks)} (stdlib)", folder,
                                               blanca_job(tasks, folder), **where))
        else:
            root = attention_dir()
            call = attention_job(DEMO_CORPUS, root, spec=model, limit=DEMO_LIMIT,
                                 roots=access.policy().corpus_roots)
            submitted.append(queue.submit_call(kind, model, f"attention maps: {DEMO_CORPUS} ({DEMO_LIMIT})", root,
                                               call, **where))
    return submitted


def demo_button(kind: JobKind, where: str, note: str = "") -> None:
    """The demo of ``kind`` as one button (key ``demo_<where>``) with a line on what it computes (and ``note``).

    A click submits :func:`submit_demo` for this tab (on the sidebar's device and dtype) and reruns, so the
    page's job panel shows its progress.
    Nothing is offered while a job of ``kind`` is queued or running, from any tab (no demo twice). Every
    server's policy (:func:`ui.access.policy`) allows the demos: embedded or default models, built-in corpora."""
    if running(kind):
        return
    if st.button(demo_label(kind), type="primary", key=f"demo_{where}"):
        submit_demo(kind, job_queue(), owner=owner(), **placement())
        st.rerun()
    st.caption(plain(describe_demo(kind)) + (f" {note}" if note else ""))


def running(kind: JobKind) -> bool:
    """Whether a job of ``kind`` is queued or running, from this tab or another (its results will show here)."""
    return any(job.active for job in job_queue().jobs(kind))


def no_results(kind: JobKind, where: str, message: str, note: str = "") -> None:
    """A page without results: ``message`` (how to get some) and the demo's button under it (``note``: for its
    caption); while a job of ``kind`` is queued or running (this tab's or another's), one line instead: the results
    appear when it finishes."""
    if running(kind):
        st.info("A run is under way (progress above): its results appear here when it finishes.")
        return
    st.info(message)
    demo_button(kind, where, note)
