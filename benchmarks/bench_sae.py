"""`make sae`'s figures: the default SmolLM2 SAE's training time, its quality as the field reports it, and what its
latents say about syntax (issue 47), written to ``docs/bench/sae.txt`` (:mod:`benchmarks.report`).

Reads the folder ``make sae`` trained (``--folder``, default ``runs/sae/smollm2-135m-L9-w4096-k32``):

* **training**: tokens, steps, seconds and tokens/s of its ``provenance.json`` (the call that finished it);
* **quality** on HumanEval (:func:`probes.sae.evaluate_sae`): variance explained, L0, dead latents, the
  cross-entropy clean, with the SAE spliced in and zero-ablated, and CE loss recovered, against the issue's
  targets (variance explained >= 0.75, CE loss recovered >= 0.85 at L0 <= 64, dead latents <= 10%);
* **enrichment** on HumanEval (:func:`probes.sae.enrich`, bootstrap over snippets): how many latents are
  *selective* for one category, which categories have such dedicated latents and which have none, and each
  category's best latent with its precision and recall intervals;
* **versus probe** (:func:`probes.sae.versus_probe`): on INSPECT tasks built from the stdlib as ``probes inspect``
  builds them (``VERSUS_TASKS``: KTX at INSPECT's 1,000 samples, three function-level tasks at 500 to stay within
  about five minutes on this CPU; IDN is left out: its one-token identifiers are pooled at the first token, which
  the SAE is not read at), the linear probe's and the best single latent's test accuracy at the SAE's layer, with
  95% bootstrap intervals over test samples, the majority baseline and the latent's label from the enrichment.

A latent counts as selective for its best category when it fires on at least ``MIN_FIRES`` tokens and the lower end
of its precision interval for that category is at least ``SELECTIVE``: most of its firing is on that category's
tokens, with the uncertainty of the corpus's snippets taken into account. Precision is read against each category's
share of the corpus's tokens, which the report prints: a category that holds most tokens (docstrings make Natural
Language the largest in HumanEval) is easier to be precise on than a rare one.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks.report import Report

if TYPE_CHECKING:
    from asc.models import ModelBundle
    from probes.sae import Enrichment, SparseAutoencoder

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEFAULT_FOLDER = Path("runs/sae/smollm2-135m-L9-w4096-k32")
SELECTIVE = 0.8  # lower end of the best category's precision interval
MIN_FIRES = 20  # tokens a latent fires on before it can count as selective
TARGETS = {"variance_explained": 0.75, "ce_recovered": 0.85, "l0": 64, "dead_fraction": 0.10}
VERSUS_TASKS = {"KTX": 1000, "LEN": 500, "TYP": 500, "CPX": 500}  # INSPECT task: samples (module doc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folder", type=Path, default=DEFAULT_FOLDER)
    ap.add_argument("--corpus", default="humaneval")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--n-boot", type=int, default=200)
    args = ap.parse_args()

    import numpy as np

    from asc import load_corpus, load_model
    from benchmarks.report import quiet_torch
    from probes.sae import check_sae_for, corpus_activations, enrich, evaluate_sae, load_sae

    quiet_torch(None)
    sae = load_sae(args.folder)
    provenance = json.loads((args.folder / "provenance.json").read_text(encoding="utf-8"))
    bundle = load_model(provenance["model"])
    layer = check_sae_for(sae, bundle, None)
    sources = [s.source for s in load_corpus(args.corpus, limit=args.limit)]
    report = Report("sae", "the default SmolLM2 SAE: training time, quality, syntax enrichment (make sae)")

    report.section("training")
    seconds = float(provenance["seconds_this_call"])
    report.line(f"{provenance['model']}, layer {layer}, {sae.cfg.d_sae} latents, k={sae.cfg.k}; "
                f"{provenance['tokens']:,} tokens of {provenance['corpus']} in {provenance['steps']} steps; "
                f"{'complete' if provenance['complete'] else 'INCOMPLETE'}")
    report.line(f"training: {report.figure('train_min', seconds / 60, '.1f')} min "
                f"({report.figure('train_tokens_per_s', provenance['tokens_per_second_this_call'], '.0f')} tokens/s; "
                f"target <= 60 min on this 2-core CPU)")

    report.section("quality")
    q = evaluate_sae(sae, bundle, sources, layer)
    report.line(f"{args.corpus}: {q.n_snippets} snippets, {q.n_tokens:,} tokens")
    report.line(f"variance explained {report.figure('variance_explained', q.variance_explained, '.3f')} "
                f"(target >= {TARGETS['variance_explained']})")
    report.line(f"L0 {report.figure('l0', q.l0, '.1f')} (target <= {TARGETS['l0']})")
    report.line(f"dead latents {q.dead_latents} = {report.figure('dead_pct', 100 * q.dead_fraction, '.1f')}% "
                f"(target <= {100 * TARGETS['dead_fraction']:.0f}%)")
    report.line(f"cross-entropy: clean {report.figure('ce_clean', q.ce_clean, '.3f')}, SAE spliced in "
                f"{report.figure('ce_sae', q.ce_sae, '.3f')}, zero-ablated {report.figure('ce_zero', q.ce_zero, '.3f')}"
                f" nats/token; CE loss recovered {report.figure('ce_recovered', q.ce_recovered, '.3f')} "
                f"(target >= {TARGETS['ce_recovered']})")

    report.section("enrichment")
    acts = corpus_activations(sae, bundle, sources, layer)
    e = enrich(acts.matrix(), acts.snippet, acts.category, acts.node_type, acts.categories, acts.node_types,
               n_boot=args.n_boot, seed=0)
    alive = e.fires > 0
    selective = (e.fires >= MIN_FIRES) & (e.best_category >= 0) & (e.best_category_precision_ci[:, 0] >= SELECTIVE)
    report.line(f"{e.n_tokens:,} tokens of {e.n_snippets} snippets; {report.figure('alive', int(alive.sum()))} of "
                f"{e.n_latents} latents fire; {report.figure('selective', int(selective.sum()))} are selective for one "
                f"category (fire on >= {MIN_FIRES} tokens, precision's {100 * e.level:.0f}% interval above {SELECTIVE})")
    dedicated = []
    for c, name in enumerate(e.categories):
        mine = np.flatnonzero(selective & (e.best_category == c))
        if len(mine):
            dedicated.append(name)
        share = float(e.tokens_category[c]) / max(e.n_tokens, 1)
        slug = name.lower().replace(" ", "_")  # the docs quote a category's figures by these names
        report.figure(f"{slug}_share_pct", 100 * share, ".1f")
        report.figure(f"{slug}_selective", len(mine))
        best = e.ranked(name, 1)
        if not best:
            report.line(f"  {name:<24} {100 * share:4.1f}% of tokens; "
                        + ("no token of this corpus" if not e.tokens_category[c] else "no latent fires on it"))
            continue
        i = best[0]["latent"]
        p_ci, r_ci = e.best_category_precision_ci[i], e.best_category_recall_ci[i]
        own = int(e.best_category[i]) == c
        if own:
            report.figure(f"{slug}_precision", e.precision_category[i, c], ".2f")
            report.figure(f"{slug}_precision_lo", p_ci[0], ".2f")
            report.figure(f"{slug}_precision_hi", p_ci[1], ".2f")
            report.figure(f"{slug}_lift", e.precision_category[i, c] / share, ".0f")  # precision over the base rate
        report.line(f"  {name:<24} {100 * share:4.1f}% of tokens, {len(mine):4d} selective; best latent {i:5d} ({e.label(i)}): "
                    f"precision {e.precision_category[i, c]:.2f}"
                    + (f" [{p_ci[0]:.2f}, {p_ci[1]:.2f}]" if own else "")
                    + f", recall {e.rate_category[i, c]:.2f}" + (f" [{r_ci[0]:.2f}, {r_ci[1]:.2f}]" if own else ""))
    report.figure("dedicated", len(dedicated))
    report.figure("categories", len(e.categories))
    report.line(f"categories with dedicated latents: {', '.join(dedicated) or 'none'}")
    report.line(f"categories without: {', '.join(c for c in e.categories if c not in dedicated) or 'none'}")
    versus(report, sae, bundle, layer, e)
    report.write()


def versus(report: Report, sae: SparseAutoencoder, bundle: ModelBundle, layer: int, e: Enrichment) -> None:
    """The ``[versus probe]`` section: the best single latent against INSPECT's linear probe (module doc)."""
    from probes.catalog import build_tasks
    from probes.sae import versus_probe

    report.section("versus_probe")
    start = time.perf_counter()
    tasks = [build_tasks([name], "stdlib", size, 0)[0] for name, size in VERSUS_TASKS.items()]
    v = versus_probe(sae, bundle, tasks, layer, n_boot=1000, seed=0)
    seconds = time.perf_counter() - start
    r = report.figure
    report.line(f"{bundle.name}, layer {layer}, {v.pooling} token; INSPECT tasks from stdlib (seed 0); test accuracy "
                f"with {100 * v.level:.0f}% bootstrap intervals over test samples ({v.n_boot} resamples)")
    wins = 0
    for t, name in enumerate(v.tasks):
        key, latent = f"versus_{name.lower()}", int(v.latent[t])
        (p_lo, p_hi), (l_lo, l_hi), (g_lo, g_hi) = v.probe_ci[t], v.latent_ci[t], v.gap_ci[t]
        wins += bool(g_lo > 0)
        report.line(f"  {name} ({v.n_classes[t]} classes, {tasks[t].n} samples, {v.n_test[t]} test, "
                    f"{v.off_distribution[t]} pooled off the SAE's positions): majority "
                    f"{r(f'{key}_majority', v.majority[t], '.2f')}")
        report.line(f"    probe       {r(f'{key}_probe', v.probe_accuracy[t], '.3f')} "
                    f"[{r(f'{key}_probe_lo', p_lo, '.3f')}, {r(f'{key}_probe_hi', p_hi, '.3f')}]")
        report.line(f"    best latent {r(f'{key}_latent', v.latent_accuracy[t], '.3f')} "
                    f"[{r(f'{key}_latent_lo', l_lo, '.3f')}, {r(f'{key}_latent_hi', l_hi, '.3f')}] "
                    f"(train {v.latent_train_accuracy[t]:.3f}): latent {latent}, on HumanEval {e.label(latent)}")
        report.line(f"    probe minus latent {g_lo:+.3f} to {g_hi:+.3f}; rule: {v.rule(t).describe(v.labels[t])}")
    report.line(f"the probe beats the best latent on {r('versus_probe_wins', wins)} of "
                f"{r('versus_tasks', len(v.tasks))} tasks (the difference's interval above 0); "
                f"{r('versus_s', seconds, '.0f')} s with building the tasks")


if __name__ == "__main__":
    main()
