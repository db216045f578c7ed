"""`make bench` (AsC-Eval per layer): what the logit lens costs, as ratios measured in one run.

1. One 60-line function (the longest of ``algorithms`` up to 60 lines): per-layer AsC-Eval
   (:func:`asc.depth.explain_layers`) against one bare forward pass of the model over it. Target: <= 8x.
2. A small corpus run (``--snippets`` functions of ``algorithms``): ``run_corpus(..., layers=True)`` against the
   same run without ``--layers``. Target: <= 8x.

The two kinds of call are interleaved over ``--rounds`` rounds to share the machine's noise; the median ratio is
printed, with the absolute times. Per-layer unembedding scales with layers x vocabulary x hidden size, so Gemma
(262k vocabulary) costs more than SmolLM2 (49k). Written to ``docs/bench/layers.txt`` (:mod:`benchmarks.report`);
docs/layers.md quotes it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", action="append", help="models (default smollm2-135m)")
    ap.add_argument("--snippets", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu", help="cpu, cuda, ... (the GPU report runs it on cuda)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--out", type=Path, default=None, help="the file written (default: docs/bench/<bench>.txt)")
    args = ap.parse_args()

    import torch
    from transformers.utils import logging as hf_logging

    from asc.corpus import run_corpus
    from asc.corpus.sources import load_corpus
    from asc.depth import explain_layers
    from asc.models import load_model
    from benchmarks.report import Report

    report = Report("layers", "per-layer AsC-Eval (logit lens) against one forward pass, and a --layers corpus run "
                    "against a plain one", out=args.out)
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    functions = load_corpus("algorithms", min_lines=40, max_lines=60)
    longest = max(functions, key=lambda s: len(s.source.splitlines())).source
    corpus = load_corpus("algorithms", limit=args.snippets, min_lines=10, max_lines=60)
    for name in args.model or ["smollm2-135m"]:
        bundle = load_model(name, device=args.device, dtype=args.dtype)
        ids = bundle.tokenizer(longest, return_tensors="pt")["input_ids"].to(bundle.model.device)
        explain_layers(bundle, longest)  # warm-up
        times: dict[str, list[float]] = {"forward": [], "layers": [], "run": [], "run --layers": []}
        for _ in range(args.rounds):
            t = time.perf_counter()
            with torch.inference_mode():
                bundle.model(input_ids=ids, use_cache=False)
            if ids.is_cuda:  # CUDA runs asynchronously: time what it did
                torch.cuda.synchronize()
            times["forward"].append(time.perf_counter() - t)
            t = time.perf_counter()
            explain_layers(bundle, longest)
            times["layers"].append(time.perf_counter() - t)
            with tempfile.TemporaryDirectory() as tmp:
                for key, layers in (("run", False), ("run --layers", True)):
                    t = time.perf_counter()
                    run_corpus(bundle, corpus, Path(tmp) / key.replace(" ", ""), corpus="algorithms", progress=False,
                               layers=layers)
                    times[key].append(time.perf_counter() - t)
        one = statistics.median(b / a for a, b in zip(times["forward"], times["layers"], strict=True))
        run = statistics.median(b / a for a, b in zip(times["run"], times["run --layers"], strict=True))
        fig, tag = report.figure, bundle.name.split("-")[0].lower()  # a folder model: its name
        med = {k: statistics.median(v) for k, v in times.items()}
        report.section(tag)
        report.line(f"{name} ({bundle.n_layers} layers, {ids.shape[1]}-token function, {len(corpus)}-snippet run, "
                    f"{args.rounds} rounds):")
        report.line(f"  one function: forward {fig(tag + '_forward_s', med['forward'], '.2f')} s, per-layer AsC-Eval "
                    f"{fig(tag + '_layers_s', med['layers'], '.2f')} s -> {fig(tag + '_function_x', one, '.1f')}x "
                    "(target <= 8x)")
        report.line(f"  corpus run:   plain {fig(tag + '_run_s', med['run'], '.1f')} s, --layers "
                    f"{fig(tag + '_run_layers_s', med['run --layers'], '.1f')} s -> {fig(tag + '_run_x', run, '.1f')}x "
                    "(target <= 8x)")
    report.write()


if __name__ == "__main__":
    main()
