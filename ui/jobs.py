"""The app-wide background queue and the progress panel pages show for their own kind of job.

Jobs belong to the browser tab that submitted them (:func:`owner`): a tab's panel lists and cancels its own
jobs, and their text (model ids, corpus specs, errors: what users typed) is shown as plain text; other tabs' jobs
of the same kind show while queued or running, read only and without their text (a new tab sees the demo another
tab started, and where its own job stands in the one-at-a-time queue).
Finished results are run folders, which every tab may read. When one of this tab's jobs finishes, its
panel reruns the whole page, so the page shows the new results without a click.

The one-click demos (:func:`demo_button`, defined here and nowhere else) give a fresh install results on
every page within the minutes their button states (:data:`DEMO_MINUTES`): a small run of the page's own kind
through the same queue, on :func:`asc.paths.default_model` (``$ASC_MODEL``: the tests' tiny random model). A demo
is named by its job's kind (:class:`asc.jobs.JobKind`, a string), or :data:`CAUSAL_DEMO`: the Causal page's, an eval
run of its own, large enough for Table II to estimate most concepts. The minutes come from what `make bench`
measured (:func:`demo_minutes`: ``docs/bench/demos.txt``), never typed by hand.
"""

from __future__ import annotations

import atexit
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TypedDict

import streamlit as st

from asc import (
    APP_ROOT,
    EMBEDDED,
    MIN_SNIPPETS,
    Job,
    JobKind,
    JobQueue,
    attention_dir,
    blanca_dir,
    default_model,
    gluecode_dir,
    layers_dir,
    runs_dir,
)
from probes import layer_job
from probes.blanca import blanca_job
from probes.codesyntax import attention_job
from probes.gluecode import gluecode_job
from probes.sae import sae_job
from ui import access
from ui.cache import get_job_bundle
from ui.widgets import placement, plain, trust_remote_code

DEMO_CORPUS = "humaneval"  # the eval and attention demos: the first DEMO_LIMIT HumanEval functions
DEMO_LIMIT = 40
# the Causal page's demo: every HumanEval problem (164), a run of its own. Table II estimates a treatment from at least
# asc.causal.MIN_SNIPPETS (30) snippets that have it, a statistical minimum kept as it is: on the Global demo's first
# 40 functions only the concepts (nearly) every snippet has reach it, on all 164 most categories do
# (docs/bench/demos.txt counts the rows and categories estimated at both sizes).
DEMO_CAUSAL_LIMIT = 164
CAUSAL_DEMO = "causal"  # the name of the Causal page's demo (the others are named by their JobKind)
PANEL_EVERY = 2.0  # seconds between two refreshes of a page's job panel
STOP_WAIT = 10.0  # seconds a stopping server waits for its running job to end at its next batch
DEMO_TASKS = ("KTX", "IDN")  # the layer demo: two INSPECT tasks of DEMO_SIZE samples built from DEMO_TASK_CORPUS
# 60 test samples per task (6 per KTX class): at 100 samples (20 test ones) a 10-class accuracy moved 0.05 a sample,
# and MiniLM's KTX heatmap (chance) read as broken; 500 samples took twice as long here for the same picture.
# docs/bench/demos.txt has the demo's accuracies next to the majority class and the control task.
DEMO_SIZE = 300
DEMO_TASK_CORPUS = "stdlib"
DEMO_GLUECODE = ("algorithms", 24, ("function", "file"))  # the glueCode demo: corpus, items per task (half test), levels
DEMO_BASELINE = "minilm-l6"  # the layer demo's baseline encoder (Table III), where installed
DEMO_BLANCA = ("minilm-l6", ("R", "L", "F", "H", "U"))  # the BLANCA demo: encoder (where installed), stdlib tasks
# the SAE demo: a TopK SAE of DEMO_SAE_WIDTH latents (k DEMO_SAE_K) trained on DEMO_SAE_TOKENS tokens of HumanEval at
# default_layer, then measured and enriched on its first DEMO_LIMIT functions (a first version that trained on the
# whole stdlib corpus took 745 s from the click on a loaded 2-core CPU)
DEMO_SAE_TOKENS, DEMO_SAE_WIDTH, DEMO_SAE_K = 8192, 512, 16
DEMOS = (JobKind.EVAL, CAUSAL_DEMO, JobKind.ATTENTION, JobKind.LAYERS, JobKind.BLANCA, JobKind.GLUECODE, JobKind.SAE)
DEMO_BENCH = APP_ROOT / "docs" / "bench" / "demos.txt"  # what `make bench` measured (benchmarks/bench_demos.py)
DEMO_MARGIN = 1.5  # a button promises its measured time (click to results) times this, in whole minutes
DEMO_UNMEASURED = 15  # minutes a button states when the bench file is absent (an installed app) or lacks the demo
DEMO_BUTTON = "Run a small demo"  # every demo button's label starts so (demo_label)


def demo_kind(demo: str) -> JobKind:
    """The kind of job the demo ``demo`` (a :class:`JobKind` or :data:`CAUSAL_DEMO`) runs."""
    return JobKind.EVAL if demo == CAUSAL_DEMO else JobKind(demo)


def bench_figures(path: Path) -> dict[str, str]:
    """The ``[figures]`` block (``name = value`` lines) of a file `make bench` wrote (``benchmarks/report.py``'s
    format); empty when the file is absent."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    block = lines[lines.index("[figures]") + 1:] if "[figures]" in lines else []
    return dict(line.split(" = ", 1) for line in block if " = " in line)


def promised_minutes(seconds: float) -> int:
    """What a button states for a demo measured at ``seconds``: times :data:`DEMO_MARGIN`, in whole minutes (at
    least 1)."""
    return max(1, math.ceil(seconds * DEMO_MARGIN / 60))


def demo_minutes(path: Path = DEMO_BENCH) -> dict[str, int]:
    """Per demo (:data:`DEMOS`), the minutes its button states: the seconds `make bench` measured from the click to
    the page's results (figure ``<demo>_s`` of ``path``) times :data:`DEMO_MARGIN`, rounded up to whole minutes;
    :data:`DEMO_UNMEASURED` for a demo the file does not measure (or without the file: an app installed with pip)."""
    figures = bench_figures(path)
    minutes: dict[str, int] = {}
    for demo in DEMOS:
        try:
            seconds = float(figures[f"{demo}_s"])
        except (KeyError, ValueError):
            minutes[str(demo)] = DEMO_UNMEASURED
            continue
        minutes[str(demo)] = promised_minutes(seconds)
    return minutes


# what each demo promises, on its button: from its click to its results with SmolLM2 / MiniLM on this 2-core CPU as
# `make bench` found it (its load is in the file's header). Keyed by demo name: DEMO_MINUTES[JobKind.EVAL] works too.
# tests/e2e/test_browser.py runs the Global demo in chromium and prints its time against the promise.
DEMO_MINUTES = demo_minutes()


def demo_label(demo: str) -> str:
    """The demo button's label: what it promises (:data:`DEMO_MINUTES`)."""
    minutes = DEMO_MINUTES[str(demo)]
    return f"{DEMO_BUTTON} (up to {minutes} minute{'s' if minutes != 1 else ''} on a 2-core CPU)"


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
              JobKind.GLUECODE: "glueCode tasks", JobKind.BLANCA: "BLANCA tasks", JobKind.SAE: "sparse autoencoder"}


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


def demo_models(demo: str) -> list[str]:
    """The models the demo ``demo`` runs: the default model; the layer demo adds the MiniLM baseline
    (:data:`DEMO_BASELINE`) where its weights are installed, and the BLANCA demo runs MiniLM in its place, but
    neither next to a synthetic model (:attr:`asc.models.EmbeddedModel.synthetic`, the tests' tiny random one:
    its demos stay free of real models)."""
    kind = demo_kind(demo)
    model = default_model()
    synthetic = model in EMBEDDED and EMBEDDED[model].synthetic
    baseline = EMBEDDED[DEMO_BASELINE]
    if kind is JobKind.LAYERS and not synthetic and model != DEMO_BASELINE and baseline.installed():
        return [model, DEMO_BASELINE]
    encoder = DEMO_BLANCA[0]
    if kind is JobKind.BLANCA and not synthetic and EMBEDDED[encoder].installed():
        return [encoder]  # BLANCA embeds text: a sentence encoder in place of the default decoder
    return [model]


def describe_demo(demo: str) -> str:
    """What the demo ``demo`` computes, in a sentence (models as plain text)."""
    kind = demo_kind(demo)
    models = " and ".join(demo_models(demo))
    if demo == CAUSAL_DEMO:
        return (f"AsC-Eval of all {DEMO_CAUSAL_LIMIT} HumanEval functions on {models}, then Table II: a concept is "
                f"estimated from at least {MIN_SNIPPETS} snippets that have it (the minimum per treatment), which "
                f"most categories reach in all {DEMO_CAUSAL_LIMIT} functions and few in the Global demo's "
                f"{DEMO_LIMIT}.")
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
    if kind is JobKind.SAE:
        return (f"A TopK sparse autoencoder on {models} ({DEMO_SAE_WIDTH} latents, {DEMO_SAE_K} active per token) "
                f"trained on {DEMO_SAE_TOKENS:,} tokens of HumanEval, then measured and enriched on its first "
                f"{DEMO_LIMIT} functions.")
    return f"AsC-Eval of the first {DEMO_LIMIT} HumanEval functions on {models}."


def sae_root() -> Path:
    """Where the app's SAE folders go and are listed from: ``<runs>/sae``."""
    return runs_dir() / "sae"


def demo_sae_folder(model: str) -> Path:
    """The SAE demo's folder for ``model`` (under :func:`sae_root`)."""
    name = "".join(c if c.isalnum() or c in "-_." else "-" for c in model.rsplit("/", 1)[-1])
    return sae_root() / f"demo-{name}-w{DEMO_SAE_WIDTH}-k{DEMO_SAE_K}"


class _Where(TypedDict):
    """Whose a demo's jobs are and where their models run (the queue's keyword arguments)."""

    owner: str
    device: str | None
    dtype: str | None


def submit_demo(demo: str, queue: JobQueue, owner: str = "", device: str | None = None,
                dtype: str | None = None) -> list[Job]:
    """Queue the demo ``demo`` (a :class:`JobKind` or :data:`CAUSAL_DEMO`) on ``queue``: what the page's own *Start*
    submits, with the demo's settings, into the page's usual folders (the eval demo: the conventional run folder of
    (model, humaneval, 40); the causal demo: of (model, humaneval, 164)), its models on ``device`` in ``dtype``
    (None: the queue's loader's default)."""
    submitted = []
    where: _Where = {"owner": owner, "device": device, "dtype": dtype}
    kind = demo_kind(demo)
    for model in demo_models(demo):
        if kind is JobKind.EVAL:
            limit = DEMO_CAUSAL_LIMIT if demo == CAUSAL_DEMO else DEMO_LIMIT
            submitted.append(queue.submit(model, DEMO_CORPUS, limit, runs_dir(), **where))
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
        elif kind is JobKind.SAE:
            folder = demo_sae_folder(model)
            call = sae_job(folder, train_corpus=DEMO_CORPUS, tokens=DEMO_SAE_TOKENS, width=DEMO_SAE_WIDTH,
                           k=DEMO_SAE_K, corpus=DEMO_CORPUS, limit=DEMO_LIMIT)
            submitted.append(queue.submit_call(kind, model, f"SAE demo: {DEMO_SAE_TOKENS:,} tokens", folder, call,
                                               **where))
        else:
            root = attention_dir()
            call = attention_job(DEMO_CORPUS, root, spec=model, limit=DEMO_LIMIT,
                                 roots=access.policy().corpus_roots)
            submitted.append(queue.submit_call(kind, model, f"attention maps: {DEMO_CORPUS} ({DEMO_LIMIT})", root,
                                               call, **where))
    return submitted


def demo_button(demo: str, where: str, note: str = "") -> None:
    """The demo ``demo`` (a :class:`JobKind` or :data:`CAUSAL_DEMO`) as one button (key ``demo_<where>``) with a
    line on what it computes (and ``note``).

    A click submits :func:`submit_demo` for this tab (on the sidebar's device and dtype) and reruns, so the
    page's job panel shows its progress.
    Nothing is offered while a job of its kind is queued or running, from any tab (no demo twice). Every
    server's policy (:func:`ui.access.policy`) allows the demos: embedded or default models, built-in corpora."""
    if running(demo_kind(demo)):
        return
    if st.button(demo_label(demo), type="primary", key=f"demo_{where}"):
        submit_demo(demo, job_queue(), owner=owner(), **placement())
        st.rerun()
    st.caption(plain(describe_demo(demo)) + (f" {note}" if note else ""))


def running(kind: JobKind) -> bool:
    """Whether a job of ``kind`` is queued or running, from this tab or another (its results will show here)."""
    return any(job.active for job in job_queue().jobs(kind))


def no_results(kind: JobKind, where: str, message: str, note: str = "", demo: str | None = None) -> None:
    """A page without results: ``message`` (how to get some) and the button of the demo ``demo`` (default: ``kind``'s)
    under it (``note``: for its caption); while a job of ``kind`` is queued or running (this tab's or another's), one
    line instead: the results appear when it finishes."""
    if running(kind):
        st.info("A run is under way (progress above): its results appear here when it finishes.")
        return
    st.info(message)
    demo_button(kind if demo is None else demo, where, note)
