"""`make bench` (issue 44): every one-click demo as the app runs it, from the click to the page's results.

For each demo of :data:`ui.jobs.DEMOS` (or those given with ``--demo``): :func:`ui.jobs.submit_demo` into a fresh
:class:`asc.jobs.JobQueue` whose loader loads each job's model (as a fresh server's first click does: weights
installed and de-quantized already, nothing loaded in the process), then wait until its jobs are done. The demo's
time runs from the submit to the end of its last job, plus what the page computes once they end: for the Causal
page's demo, Table II on its run with the page's default settings (:func:`asc.causal.run_causal`, as
``ui.cache.causal_result`` calls it). The page's own rerun (a poll every ``ui.jobs.PANEL_EVERY`` seconds, then
drawing) is not in it: :data:`ui.jobs.DEMO_MARGIN` covers it.

Every demo writes into one fresh runs folder (``$ASC_RUNS_DIR`` set to a temporary folder, so nothing is reused from
an earlier run; the Global and Causal demos write different run folders). Besides the times, what the demos show:
the treatments Table II estimates on the Causal demo's run and on its first :data:`ui.jobs.DEMO_LIMIT` snippets
(the Global demo's size), and the layer demo's accuracies at the dev-chosen layer next to the majority class and
the control task.

Written to ``docs/bench/demos.txt`` after each demo (a run stopped part way keeps the demos it finished);
:data:`ui.jobs.DEMO_MINUTES` is read from its figures ``<demo>_s`` (times :data:`ui.jobs.DEMO_MARGIN`, in whole
minutes), and docs/app.md quotes them.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")


def _estimated(table) -> int:
    return int((table["status"] == "estimated").sum())


def _causal_lines(report, job, seconds: float) -> float:
    """Table II on the Causal demo's run as the page computes it, and on its first DEMO_LIMIT snippets (counts only
    matter there); returns the page's estimation time."""
    from asc.causal import MIN_SNIPPETS, run_causal
    from asc.corpus.runs import load_run
    from ui import jobs

    run = load_run(job.out, tables=("snippets", "concepts"))
    t = time.perf_counter()
    result = run_causal(run)  # the page's defaults: minimum, 50 simulations, seed 0, refuter subsample
    estimate = time.perf_counter() - t
    ids = list(run.snippets["id"])[: jobs.DEMO_LIMIT]
    small = dataclasses.replace(run, snippets=run.snippets[run.snippets["id"].isin(ids)],
                                concepts=run.concepts[run.concepts["snippet_id"].isin(ids)])
    few = run_causal(small, simulations=10)  # how many rows the Global demo's run would estimate
    categories = [t for t in result.table["treatment"] if t.startswith("category: ")]
    done = set(result.table[result.table["status"] == "estimated"]["treatment"])
    done_few = set(few.table[few.table["status"] == "estimated"]["treatment"])
    fig = report.figure
    report.line(f"  eval run of {len(run.snippets)} snippets: {fig('causal_run_s', seconds, '.0f')} s; Table II "
                f"on the page: {fig('causal_estimate_s', estimate, '.0f')} s")
    report.line(f"  treatments estimated (at least {MIN_SNIPPETS} snippets each): "
                f"{fig('causal_estimated', _estimated(result.table), 'd')} of "
                f"{fig('causal_treatments', len(result.table), 'd')} on {len(run.snippets)} snippets, "
                f"{fig('causal_estimated_small', _estimated(few.table), 'd')} on the first {len(ids)}")
    report.line(f"  categories estimated: {fig('causal_categories', len(done & set(categories)), 'd')} of "
                f"{len(categories)} on {len(run.snippets)} snippets "
                f"({', '.join(c[10:] for c in categories if c in done)}), "
                f"{fig('causal_categories_small', len(done_few & set(categories)), 'd')} on the first {len(ids)}")
    return estimate


def _layer_lines(report, folder: Path) -> None:
    """The layer demo's results: per model and task, test accuracy at the dev-chosen layer, the majority class and
    the control task (mean over layers), and the test samples behind them."""
    import numpy as np

    from probes.inspect.runs import load_results

    for r in load_results(folder):
        tag = f"layers_{r.model.split('-')[0].lower()}_{r.task.lower()}"
        report.line(f"  {r.model:13s} {r.task}: accuracy {report.figure(tag, float(r.accuracy[r.best_layer]), '.2f')}"
                    f" at layer {r.best_layer} (best {float(np.max(r.accuracy)):.2f}), majority "
                    f"{report.figure(tag + '_majority', r.majority, '.2f')}, control "
                    f"{report.figure(tag + '_control', float(np.mean(r.control_accuracy)), '.2f')}; "
                    f"{report.figure(tag + '_n_test', len(r.y_test), 'd')} test samples")


def main() -> None:
    logging.disable(logging.WARNING)  # ui.jobs imported outside a server: its caches warn "No runtime found"
    from ui import jobs

    logging.disable(logging.NOTSET)

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", action="append", choices=[str(d) for d in jobs.DEMOS],
                        help="demos to run (default: every one, in this order)")
    parser.add_argument("--out", type=Path, default=None, help="the file written (default: docs/bench/demos.txt)")
    args = parser.parse_args()

    from transformers.utils import logging as hf_logging

    from asc.jobs import JobQueue
    from asc.models import load_model
    from asc.paths import default_model, layers_dir
    from benchmarks.report import Report

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    report = Report("demos", "each one-click demo as the app submits it, from the click to the page's results",
                    out=args.out)
    report.line(f"default model {default_model()}; a fresh runs folder; each job loads its model; the buttons state "
                f"these times x {jobs.DEMO_MARGIN} in whole minutes (ui.jobs.DEMO_MINUTES)")
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["ASC_RUNS_DIR"] = tmp  # read through asc.paths when the demos are submitted
        for demo in args.demo or [str(d) for d in jobs.DEMOS]:
            queue = JobQueue(load_model)
            report.section(demo)
            start = time.perf_counter()
            submitted = jobs.submit_demo(demo, queue)
            queue.wait()
            seconds = time.perf_counter() - start
            failed = [f"{job.model}: {job.status} {job.error}" for job in submitted if job.status != "done"]
            if failed:
                raise SystemExit(f"the {demo} demo did not finish: {'; '.join(failed)}")
            report.line(jobs.describe_demo(demo))
            if demo == jobs.CAUSAL_DEMO:
                seconds += _causal_lines(report, submitted[0], seconds)
            elif demo == "layers":
                _layer_lines(report, layers_dir())
            models = ", ".join(f"{job.model} {job.elapsed:.0f} s" for job in submitted)
            report.line(f"  click to results: {report.figure(f'{demo}_s', seconds, '.0f')} s ({models}); load "
                        f"average {os.getloadavg()[0]:.1f} at the end -> the button states "
                        f"{jobs.promised_minutes(round(seconds))} min")
            report.write()


if __name__ == "__main__":
    main()
