"""`make bench` (corpus attribution, issue 30): what ``python -m asc attribute-corpus`` costs per snippet against the
k gradient x input passes it runs, measured as ratios in one run, and what k does to the matrix's intervals.

On the first ``--snippets`` functions of ``--corpus`` (HumanEval), evaluated first into a scratch run folder (not
timed):

1. the sweep: :func:`asc.why.corpus_run.attribute_run` with ``--k`` targets per snippet, everything included
   (reading the run's parts, rebuilding each snippet's explanation from its stored scores, sampling, the k
   gradient passes, the sums per category and distance, writing the part), timed per snippet;
2. the reference: for the very targets the sweep drew, one :func:`asc.why.attribute.attribute` call each
   (``"grad"``, the snippet's explanation given): k gradient x input passes per snippet;
3. the ratio of the sweep to the time spent in its own k gradient passes per snippet (timed where the sweep calls
   :func:`~asc.why.attribute.attribute`, so the two share the machine's load): target <= 1.2; and to the reference
   of (2), timed apart (it carries whatever else the machine did between the two);
4. intervals by k: the matrix (:func:`asc.why.matrix.attribution_matrix`) from the first k' targets each snippet
   drew (the sample is drawn in order, so they are exactly the sample of k'), for k' = 1, 2, 4, ..., k: the mean
   width of its 95% intervals over the cells with attribution (a share above 0), of every row and of common and
   rare target categories (more / at most a median number of targets), and the mean targets per row.

Sweep and reference alternate over ``--rounds`` rounds (each sweep into a fresh attribution table); medians are
printed. Written to ``docs/bench/corpus_attribution.txt`` (:mod:`benchmarks.report`;
``--out`` elsewhere).
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--corpus", default="humaneval")
    ap.add_argument("--snippets", type=int, default=12)
    ap.add_argument("--k", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--n-boot", type=int, default=500)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--out", type=Path, default=None, help="the file written (default: docs/bench/<bench>.txt)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    args = ap.parse_args()

    import numpy as np
    import torch

    import asc.why.corpus as corpus_module
    from asc.concepts import load_categories
    from asc.corpus.runs import run_corpus
    from asc.corpus.sources import load_corpus
    from asc.explain import explain
    from asc.models import load_model
    from asc.why.attribute import attribute
    from asc.why.corpus_run import ATTRIBUTION_TABLE, attribute_run, load_attribution
    from asc.why.matrix import attribution_matrix
    from asc.why.targets import node_target
    from benchmarks.report import Report, quiet_torch

    report = Report("corpus_attribution", "what corpus attribution costs against its gradient x input passes",
                    out=args.out)
    quiet_torch(args.threads)
    bundle = load_model(args.model, device=args.device, dtype=args.dtype)
    snippets = load_corpus(args.corpus, limit=args.snippets)
    scratch = Path(tempfile.mkdtemp(prefix="bench-corpus-attribution-"))
    try:
        run = scratch / "run"
        run_corpus(bundle, snippets, run, corpus=args.corpus, progress=False)
        explained = {s.id: explain(bundle, s.source) for s in snippets}
        attribute_run(run, bundle, k=1)  # warm-up
        inside = [0.0]

        def timed_attribute(*a, **kw):  # type: ignore[no-untyped-def]
            start = time.perf_counter()
            out = attribute(*a, **kw)
            inside[0] += time.perf_counter() - start
            return out

        corpus_module.attribute = timed_attribute  # the sweep's own gradient passes, timed where it calls them
        sweeps, passes, refs = [], [], []
        rows = None
        for _ in range(args.rounds):
            shutil.rmtree(run / ATTRIBUTION_TABLE)
            inside[0] = 0.0
            start = time.perf_counter()
            attribute_run(run, bundle, k=args.k)
            sweeps.append(time.perf_counter() - start)
            passes.append(inside[0])
            rows, _ = load_attribution(run)
            start = time.perf_counter()
            for sid, targets in rows.groupby("snippet_id", sort=False)["target"]:
                ex = explained[str(sid)]
                for node in targets.unique().tolist():
                    attribute(bundle, ex.source, node_target(bundle, ex, int(node)), "grad", explanation=ex)
            refs.append(time.perf_counter() - start)
        corpus_module.attribute = attribute
        assert rows is not None
        n = int(rows["snippet_id"].nunique())
        n_targets = int(rows.groupby("snippet_id")["target"].nunique().sum())
        n_tokens = [explained[str(s)].scores.n_tokens for s in rows["snippet_id"].unique()]
        sweep, own, ref = (statistics.median(v) for v in (sweeps, passes, refs))
        fig = report.figure
        report.line(f"{bundle.name} on {bundle.device} ({bundle.dtype}): {n} {args.corpus} snippets of "
                    f"{min(n_tokens)}-{max(n_tokens)} tokens, k = {args.k}: {n_targets} targets; {args.rounds} "
                    f"round(s), torch threads {torch.get_num_threads()}")
        report.line(f"  sweep (attribute_run, all included): {fig('sweep_s_per_snippet', sweep / n, '.2f')} s per "
                    f"snippet, of which its k gradient x input passes {own / n:.2f} s")
        report.line(f"  sweep / its own k gradient x input passes: {fig('sweep_x_k_grad', sweep / own, '.3f')}x "
                    "(target <= 1.2x)")
        report.line(f"  the same k passes timed apart (attribute, grad): {ref / n:.2f} s per snippet -> sweep / them "
                    f"{fig('sweep_x_ref', sweep / ref, '.2f')}x (machine noise between the two runs included)")
        report.section("intervals_by_k")
        report.line(f"mean width of the 95% intervals ({args.n_boot} snippet resamples) of the matrix from the first k' "
                    "targets each snippet drew; common rows: target categories with more than the median targets")
        categories = load_categories("python").categories
        rank = rows.drop_duplicates(["snippet_id", "target"]).copy()
        rank["draw"] = rank.groupby("snippet_id").cumcount()
        for k_prime in sorted({2**i for i in range(args.k.bit_length()) if 2**i <= args.k} | {args.k}):
            keep = rank[rank["draw"] < k_prime][["snippet_id", "target"]]
            m = attribution_matrix(rows.merge(keep, on=["snippet_id", "target"]), categories, n_boot=args.n_boot)
            width = np.where(m.share > 0, m.ci_high - m.ci_low, np.nan)  # cells with attribution
            common = m.n_targets > np.median(m.n_targets)
            cells = [f"{name} {float(np.nanmean(width[mask])):.3f}" if mask.any() else f"{name} -"
                     for name, mask in (("common", common), ("rare", ~common))]
            report.line(f"  k' = {k_prime}: {len(m.targets)} rows, {m.n_targets.mean():.1f} targets per row; mean "
                        f"width {fig(f'width_k{k_prime}', float(np.nanmean(width)), '.3f')} ({', '.join(cells)})")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    report.write()


if __name__ == "__main__":
    main()
