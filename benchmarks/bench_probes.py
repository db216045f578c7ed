"""`make bench` (probes): layer features in one batched pass, and probe training for 15 tasks.

1. Features: on the same texts (KTX-style code contexts from the algorithms corpus), times
   (a) one batched forward pass returning every layer (``probes.features.extract_features``),
   (b) the same texts one at a time, and (c) the model's bare batched forward pass without hidden
   states. Rounds are interleaved to share the machine's noise; prints the median ratios a/b
   (batching gain) and a/c (cost of returning all layers).
2. Probes: the time to train the per-layer probes (+ control task) of one model on the 15 INSPECT
   tasks at 1k samples (target: minutes). Features are SmolLM2-shaped (1,000 x 31 layers x 576)
   with each task's number of classes and a weak planted label; then, when a layers run exists
   (``--cached runs/layers``), on its real cached features, which are harder to fit.

Written to ``docs/bench/probes.txt`` (:mod:`benchmarks.report`); docs/performance.md quotes it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

from benchmarks.report import Report

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

N_CLASSES = {"KTX": 10, "IDN": 4, "LEN": 5, "TYP": 2, "REA": 2, "JBL": 2, "SRI": 2, "SRK": 2, "SCK": 2,
             "OCU": 10, "VCU": 10, "CSC": 10, "MXN": 5, "CPX": 10, "NPT": 10}


def bench_features(report: Report, model: str, n: int, rounds: int) -> None:
    import torch
    from transformers.utils import logging as hf_logging

    from asc.corpus.sources import load_corpus
    from asc.models import load_model
    from probes.features import _TOKEN_BUDGET, extract_features

    hf_logging.set_verbosity_error()
    bundle = load_model(model)
    texts = []
    for snip in load_corpus("algorithms", limit=n):
        lines = snip.source.splitlines(keepends=True)
        texts.append("".join(lines[: min(len(lines), 7)]))  # a KTX-sized context
    base = bundle.model.base_model
    times: dict[str, list[float]] = {"batched": [], "one_by_one": [], "bare": []}
    for _ in range(rounds):
        t = time.perf_counter()
        extract_features(bundle, texts)
        times["batched"].append(time.perf_counter() - t)
        t = time.perf_counter()
        for text in texts:
            extract_features(bundle, [text])
        times["one_by_one"].append(time.perf_counter() - t)
        t = time.perf_counter()
        with torch.inference_mode():
            enc = bundle.tokenizer(texts, padding=False)["input_ids"]
            order = sorted(range(len(enc)), key=lambda i: len(enc[i]))
            k = 0
            while k < len(order):  # the same micro-batches as extract_features (token budget)
                j = k + 1
                while j < len(order) and len(enc[order[j]]) * (j - k + 1) <= _TOKEN_BUDGET:
                    j += 1
                rows = [enc[i] for i in order[k:j]]
                k = j
                width = max(map(len, rows))
                ids = torch.tensor([r + [0] * (width - len(r)) for r in rows])
                mask = torch.tensor([[1] * len(r) + [0] * (width - len(r)) for r in rows])
                base(input_ids=ids, attention_mask=mask)
        times["bare"].append(time.perf_counter() - t)
    tokens = sum(len(bundle.tokenizer(t)["input_ids"]) for t in texts)
    ratio_b = statistics.median(a / b for a, b in zip(times["batched"], times["one_by_one"]))
    ratio_c = statistics.median(a / c for a, c in zip(times["batched"], times["bare"]))
    med = statistics.median(times["batched"])
    r = report.figure
    report.section("features")
    report.line(f"features, {model}: {r('texts', len(texts))} texts, {r('tokens', tokens)} tokens, "
                f"{r('layers', bundle.n_layers + 1)} layers each")
    report.line(f"  batched, all layers : {r('batched_s', med, '6.2f')} s  {r('tokens_per_s', tokens / med, '6.0f')} "
                "tokens/s")
    report.line(f"  batched / one-by-one: {r('batched_ratio', ratio_b, '6.3f')}  (median of {rounds} interleaved "
                "rounds; < 1 = batching helps)")
    report.line(f"  all layers / bare   : {r('all_layers_ratio', ratio_c, '6.3f')}  (cost of returning every layer's "
                "states)")


def _timed_probes(x, task):
    """Train the probes of every layer (with the control task): the result and the seconds it took."""
    from probes.inspect.linear import train_probes

    t = time.perf_counter()
    result, _ = train_probes(x, task)
    return result, time.perf_counter() - t


def bench_probes(report: Report, n: int, layers: int, dim: int) -> None:
    import numpy as np

    from probes.inspect.tasks import Task

    rng = np.random.default_rng(0)
    total = 0.0
    report.section("probes")
    for name, k in N_CLASSES.items():
        y = np.repeat(np.arange(k), n // k)
        rng.shuffle(y)
        split = np.array((["tr"] * 6 + ["va"] * 2 + ["te"] * 2) * (len(y) // 10 + 1))[: len(y)]
        rng.shuffle(split)
        x = rng.normal(size=(len(y), layers, dim)).astype(np.float32)
        for layer in range(layers // 3, layers, 5):  # a weak planted signal in some layers
            x[:, layer, :] += 0.04 * np.eye(k)[y] @ rng.normal(size=(k, dim))
        task = Task(name, tuple(map(str, range(k))), tuple(map(str, range(len(y)))), y, split)
        result, dt = _timed_probes(x, task)
        total += dt
        report.line(f"  {name}: {k:2d} classes, {report.figure(f'probe_{name.lower()}_s', dt, '5.1f')} s, best layer "
                    f"{result.best_layer} accuracy {result.accuracy[result.best_layer]:.2f}")
    report.line(f"probes, 15 tasks x {layers} layers x ({n} samples, {dim} dims), with control tasks: "
                f"{report.figure('probes_s', total, '.0f')} s ({report.figure('probes_min', total / 60, '.1f')} min)")


def bench_cached(report: Report, folder: str) -> None:
    """Probe training on real cached features of a layers run (``python -m probes inspect --out folder``)."""
    from pathlib import Path

    import numpy as np

    from probes.inspect.tasks import load_tsv

    root = Path(folder)
    files = sorted(root.glob("features/*/*.npy"))
    report.section("cached")
    if not files:
        report.line(f"probes on real features: none cached under {root} (run python -m probes inspect --out {root})")
        return
    total = 0.0
    for f in files:
        name, digest = f.stem.split("-")[:2]
        tsv = root / "tasks" / f"{name}-{digest}.tsv"
        if not tsv.exists():
            continue
        task = load_tsv(tsv, name)
        x = np.load(f)
        result, dt = _timed_probes(x, task)
        total += dt
        report.line(f"  {f.parent.name[:14]:<14} {name}: {x.shape[1]} layers x {x.shape[2]} dims, {task.n} samples, "
                    f"{dt:5.1f} s (best layer {result.best_layer}, accuracy {result.accuracy[result.best_layer]:.3f})")
    report.line(f"probes on real cached features: {report.figure('cached_s', total, '.0f')} s for {len(files)} "
                "(model, task) pairs")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--texts", type=int, default=48)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--cached", default="runs/layers", help="a layers run whose cached features are timed too")
    args = ap.parse_args()
    import torch

    report = Report("probes", "layer features in one batched pass, and probe training for the 15 INSPECT tasks")
    report.line(f"torch threads {torch.get_num_threads()}")
    bench_features(report, args.model, args.texts, args.rounds)
    bench_probes(report, args.samples, 31, 576)
    bench_cached(report, args.cached)
    report.write()


if __name__ == "__main__":
    main()
