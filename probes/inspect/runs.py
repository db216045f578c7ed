"""Layer-probing runs: tasks x models -> features (cached) -> probes per layer -> result files.

A run folder holds::

    <out>/tasks/<TASK>-<digest>.tsv|json        every task as probed (escaped INSPECT TSV) + its metadata
    <out>/features/<model_key>/<TASK>-...npy     per-layer summary vectors (probes.features)
    <out>/<model_key>/<TASK>-<pooling>.json|npz  probe metrics, predictions, weights, provenance

:func:`run_layers` skips every (model, task, pooling) whose result file already matches the task
hash and seed, so an interrupted run resumes where it stopped; features are cached separately, so a
run with other probe settings does not touch the model again. :func:`results_table` flattens all
results of a folder into one long table (one row per model, task and layer) for the figures and
the CSV export. The tasks come from :func:`probes.catalog.build_tasks` (INSPECT's and glueCode's by name,
TSV files), which :func:`probes.catalog.layer_job` runs here as a background job.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from asc.atomic import write_atomic
from probes.features import PROBE_MAX_TOKENS, cached_features, default_pooling, model_key
from probes.inspect.linear import ProbeResult, load_probes, save_probes, train_probes

if TYPE_CHECKING:
    import pandas as pd

    from asc.models import ModelBundle
    from probes.inspect.taskfile import Task

__all__ = ["best_layer_table", "load_results", "normalized_table", "result_path", "results_table", "run_layers"]

log = logging.getLogger(__name__)


def result_path(out: str | Path, bundle: ModelBundle, task_name: str, pooling: str) -> Path:
    return Path(out) / model_key(bundle) / f"{task_name}-{pooling}.json"


def _tokenizer_id(tokenizer) -> dict:
    return {"class": type(tokenizer).__name__, "name_or_path": str(getattr(tokenizer, "name_or_path", "")),
            "vocab_size": len(tokenizer)}


def _write_json(path: Path, doc: dict) -> None:
    write_atomic(path, lambda tmp: tmp.write_text(json.dumps(doc, indent=1, default=str)))


def run_layers(bundle: ModelBundle, tasks: Sequence[Task], out: str | Path, *, pooling: str | None = None, seed: int = 0,
               max_tokens: int = PROBE_MAX_TOKENS, corpus: str = "",
               on_progress: Callable[[str, int, int], None] | None = None,
               should_stop: Callable[[], bool] | None = None) -> list[ProbeResult]:
    """Probe every layer of ``bundle`` on each task; results are written under ``out`` (see module doc).

    ``on_progress(stage, done, total)`` reports ``"<TASK> features"`` / ``"<TASK> probes"`` steps.
    Stops between tasks (and inside feature extraction) when ``should_stop()`` turns true.
    """
    out = Path(out)
    pooling = pooling or default_pooling(bundle)
    results: list[ProbeResult] = []
    for task in tasks:
        if should_stop and should_stop():
            break
        path = result_path(out, bundle, task.name, pooling)
        if path.exists():
            old = load_probes(path)
            if old.task_digest == task.digest and old.seed == seed:
                log.info("%s %s: result exists, skipped", bundle.name, task.name)
                results.append(old)
                continue
        tsv = out / "tasks" / f"{task.name}-{task.digest}.tsv"
        if not tsv.exists():
            tsv.parent.mkdir(parents=True, exist_ok=True)
            task.to_tsv(tsv)
            _write_json(tsv.with_suffix(".json"), task.meta)

        def feat_progress(done: int, total: int, name: str = task.name) -> None:
            if on_progress:
                on_progress(f"{name} features", done, total)

        def probe_progress(done: int, total: int, name: str = task.name) -> None:
            if on_progress:
                on_progress(f"{name} probes", done, total)

        t0 = time.perf_counter()
        try:
            x, fmeta = cached_features(bundle, task, pooling, out / "features", max_tokens=max_tokens,
                                       on_progress=feat_progress, should_stop=should_stop)
        except InterruptedError:
            break
        t1 = time.perf_counter()
        provenance = {"model": bundle.name, "source": bundle.source, "kind": "decoder" if bundle.causal else "encoder",
                      "tokenizer": _tokenizer_id(bundle.tokenizer), "corpus": corpus or task.meta.get("corpus", ""),
                      "n_samples": task.n, "max_tokens": max_tokens, "truncated": fmeta.get("truncated", 0),
                      "task_meta": {k: v for k, v in task.meta.items() if k != "snippet_ids"},  # ids: tasks/*.json
                      "features_s": round(t1 - t0, 2)}
        result, weights = train_probes(x, task, model=bundle.name, pooling=pooling, seed=seed,
                                       provenance=provenance, on_progress=probe_progress)
        result.provenance["probes_s"] = round(time.perf_counter() - t1, 2)
        save_probes(result, weights, path.with_suffix(""))
        log.info("%s %s: best layer %d, test accuracy %.3f", bundle.name, task.name, result.best_layer,
                 result.accuracy[result.best_layer])
        results.append(result)
    return results


def load_results(out: str | Path) -> list[ProbeResult]:
    """Every probe result under a run folder (any model, task and pooling), in a stable order."""
    out = Path(out)
    paths = sorted(p for p in out.glob("*/*.json") if p.with_suffix(".npz").exists())
    return [load_probes(p) for p in paths]


def results_table(results: Sequence[ProbeResult]) -> pd.DataFrame:
    """Long table: model, task, pooling, layer, accuracy, dev, control, selectivity, majority, l2, n_layers, depth,
    best_layer (the layer chosen on dev) and n_test (the test samples behind each accuracy)."""
    import pandas as pd

    rows = []
    for r in results:
        n = r.n_layers
        for layer in range(n):
            rows.append({"model": r.model, "task": r.task, "pooling": r.pooling, "layer": layer,
                         "accuracy": r.accuracy[layer], "dev_accuracy": r.dev_accuracy[layer],
                         "control_accuracy": r.control_accuracy[layer], "selectivity": r.selectivity[layer],
                         "majority": r.majority, "l2": r.l2[layer], "n_layers": n,
                         "depth": layer / max(n - 1, 1), "best_layer": layer == r.best_layer,
                         "n_test": len(r.y_test)})
    return pd.DataFrame(rows, columns=["model", "task", "pooling", "layer", "accuracy", "dev_accuracy",
                                       "control_accuracy", "selectivity", "majority", "l2", "n_layers", "depth",
                                       "best_layer", "n_test"])


def best_layer_table(results: Sequence[ProbeResult]) -> pd.DataFrame:
    """model x task: test accuracy at the layer chosen on dev, with that layer and the control accuracy.

    Returns a long table (model, task, layer, accuracy, control_accuracy, majority, max_layer,
    max_accuracy); pivot it for display. ``max_accuracy`` is the best TEST accuracy over layers, the
    optimistic number papers usually print (INSPECT's tables); ``accuracy`` is the honest one: the
    layer is picked without looking at test. They differ most where dev and test differ in kind
    (KTX: test tokens are unseen in training and dev).
    """
    import pandas as pd

    rows = [{"model": r.model, "task": r.task, "layer": r.best_layer, "accuracy": r.accuracy[r.best_layer],
             "control_accuracy": r.control_accuracy[r.best_layer], "majority": r.majority,
             "max_layer": int(np.argmax(r.accuracy)), "max_accuracy": float(np.max(r.accuracy))} for r in results]
    return pd.DataFrame(rows, columns=["model", "task", "layer", "accuracy", "control_accuracy", "majority",
                                       "max_layer", "max_accuracy"])


def normalized_table(best: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Paper Table III: per task, 100 * (acc - baseline acc) / (best model's acc - baseline acc).

    ``best`` is :func:`best_layer_table`'s output. The baseline model scores 0 and the task's best
    model 100; a model below the baseline is negative. Tasks where no model beats the baseline, or the
    baseline did not run, are NaN. Returns a model x task table.
    """
    acc = best.pivot_table(index="model", columns="task", values="accuracy", aggfunc="max")
    if baseline not in acc.index:
        return acc * np.nan
    base = acc.loc[baseline]
    span = acc.max(axis=0) - base
    span = span.where(span > 1e-12)
    return 100.0 * (acc - base) / span
