"""`make bench` (branches, issue 20): what a branch costs from the trunk's KV cache, as ratios measured in one run.

1. A 64-token branch (the model's second choice forced, then greedy) from the middle of a 60-line function (the
   longest of ``algorithms`` up to 60 lines), its trunk cache warm (:func:`asc.branching.branches.prefix_cache` over the
   function, as kept after a trunk's first branch), against generating 64 tokens with the cache already warm:
   64 bare greedy decode steps (one-token forward on a copy of the cache cut at the fork, then argmax). Both make
   64 forward calls; the ratio is the branch's overhead (cache copy, function-end checks, spans). Target <= 1.2x.
   transformers' ``generate`` from the same warm cache is printed for reference.
2. :func:`asc.branching.branches.explore_forks` with 8 branches of 64 tokens (one batched decode, rows of different prefix
   lengths left-padded) against one branch of 64 tokens at the most uncertain fork. Target <= 3x.

Branches run with ``stop_at_function_end=False`` so every row makes its 64 tokens (an end-of-sequence token
still ends a row: the token counts are printed). The kinds of call are interleaved over ``--rounds`` rounds to
share the machine's noise; the median ratio is printed with the absolute times. Written to
``docs/bench/branch.txt`` (:mod:`benchmarks.report`).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--tokens", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--device", default="cpu", help="cpu, cuda, ... (the GPU report runs it on cuda)")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--out", type=Path, default=None, help="the file written (default: docs/bench/<bench>.txt)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own; on a CPU shared "
                    "with another busy process, 1 avoids OpenMP threads spinning against it)")
    args = ap.parse_args()

    import torch
    from transformers import DynamicCache

    from asc.branching.branches import branch, explore_forks, prefix_cache
    from asc.branching.forks import fork_points, most_uncertain
    from asc.explain import explain
    from asc.models import load_model
    from benchmarks.report import Report, longest_algorithm, quiet_torch

    report = Report("branch", "what a branch costs from the trunk's KV cache", out=args.out)
    quiet_torch(args.threads)
    source = longest_algorithm()
    bundle = load_model(args.model, device=args.device, dtype=args.dtype)
    model, n = bundle.model, args.tokens
    dev = model.device

    def sync() -> None:  # CUDA runs asynchronously: time what it did, not what it queued
        if dev.type == "cuda":
            torch.cuda.synchronize()
    ex = explain(bundle, source)
    ids = ex.scores.ids
    at = len(ids) // 2
    cache = prefix_cache(bundle, ids)
    forks = fork_points(ex.scores)
    top = int(most_uncertain(forks, 1)[0])

    def warm_copy(length: int) -> DynamicCache:
        return DynamicCache([(layer.keys[:, :, :length].clone(), layer.values[:, :, :length].clone())
                             for layer in cache.past.layers])

    def bare() -> float:
        past, x = warm_copy(at), torch.tensor([[int(ids[at])]], device=dev)
        t = time.perf_counter()
        with torch.inference_mode():
            for k in range(n):
                out = model(input_ids=x, position_ids=torch.tensor([[at + k]], device=dev), past_key_values=past, use_cache=True)
                past, x = out.past_key_values, out.logits[:, -1].argmax(-1, keepdim=True)
        sync()
        return time.perf_counter() - t

    def generate() -> float:
        past, head = warm_copy(at), torch.from_numpy(ids[: at + 1])[None].to(dev)
        t = time.perf_counter()
        with torch.inference_mode():
            model.generate(input_ids=head, attention_mask=torch.ones_like(head), past_key_values=past,
                           max_new_tokens=n, min_new_tokens=n, do_sample=False, temperature=None, top_p=None,
                           top_k=None, pad_token_id=0)
        sync()
        return time.perf_counter() - t

    def one_branch(where: int, use_cache: bool) -> tuple[float, int]:
        t = time.perf_counter()
        b = branch(bundle, source, where, choose=2, max_new_tokens=n, stop_at_function_end=False,
                   cache=cache if use_cache else None)
        return time.perf_counter() - t, len(b.completion.ids) - where

    def explore() -> tuple[float, int]:
        t = time.perf_counter()
        got = explore_forks(bundle, source, forks, 8, n, stop_at_function_end=False)
        return time.perf_counter() - t, sum(len(b.completion.ids) - b.fork_index for b in got)

    explore()  # warm-up; keeps the trunk's cache for explore_forks and the branch at the fork
    times: dict[str, list[float]] = {"bare": [], "generate": [], "branch": [], "one": [], "explore": []}
    made = {"branch": 0, "one": 0, "explore": 0}
    for _ in range(args.rounds):
        times["bare"].append(bare())
        times["generate"].append(generate())
        seconds, made["branch"] = one_branch(at, True)
        times["branch"].append(seconds)
        seconds, made["one"] = one_branch(top, False)
        times["one"].append(seconds)
        seconds, made["explore"] = explore()
        times["explore"].append(seconds)

    def ratio(a: str, b: str) -> float:
        return statistics.median(y / x for x, y in zip(times[a], times[b], strict=True))

    med = {k: statistics.median(v) for k, v in times.items()}
    fig = report.figure
    report.line(f"{bundle.name}: {len(source.splitlines())}-line function, {len(ids)} tokens, fork at token {at}; "
                f"{args.rounds} rounds, torch threads {torch.get_num_threads()}")
    report.line(f"  {n} tokens from a warm cache: bare decode {fig('bare_s', med['bare'], '.2f')} s "
                f"({fig('bare_ms_per_token', med['bare'] / n * 1000, '.0f')} ms/token), transformers generate "
                f"{fig('generate_s', med['generate'], '.2f')} s")
    report.line(f"  branch of {made['branch']} tokens from the middle: {fig('branch_s', med['branch'], '.2f')} s -> "
                f"{fig('branch_x_bare', ratio('bare', 'branch'), '.2f')}x the bare decode (target <= 1.2x)")
    report.line(f"  explore_forks, 8 branches ({made['explore']} tokens): {fig('explore_s', med['explore'], '.2f')} s; "
                f"one branch of {made['one']} tokens at the most uncertain fork: {fig('one_s', med['one'], '.2f')} s -> "
                f"{fig('explore_x_one', ratio('one', 'explore'), '.2f')}x (target <= 3x)")
    report.write()


if __name__ == "__main__":
    main()
