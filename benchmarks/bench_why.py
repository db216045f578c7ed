"""`make bench` (why this token?, issue 30): what attribution costs against the model's forward passes, as ratios
measured in one run, and how many integrated-gradients steps reach completeness within 1%.

On the longest function of ``algorithms`` up to 60 lines, the target the function's last predicted token (its
prompt: everything before it):

1. one forward pass: the bare model over the prompt, keeping the last position's logits (``logits_to_keep=1``,
   what the target needs), under ``inference_mode``;
2. gradient x input (:func:`asc.why.attribute.attribute`, ``"grad"``, the explanation given): target <= 3x (1);
3. integrated gradients at the default steps: target <= 1.1 x steps x (2);
4. occlusion of all N nodes with tokens in the prompt: target <= 0.6 x N x (1) (variants reuse the KV cache of the
   text before their node; nodes with the same tokens run once: the distinct variants are printed);
5. completeness: integrated gradients' gap ``|sum - (value - baseline value)| / |value - baseline value|`` at
   8, 16, 32, ... steps (Gauss-Legendre) on targets at tokens 32, 64 and 96 of the function (short prompts: each
   step count is a full run), and the first step count within 1% for each; on the default path (pad baseline, the
   first token held: :mod:`asc.why.attribute`'s attention sink) and on the textbook one (zero baseline, nothing
   held).

The kinds of call are interleaved over ``--rounds`` rounds to share the machine's noise; medians are printed. Written
to ``docs/bench/why.txt`` (:mod:`benchmarks.report`; ``--out`` elsewhere).
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
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--max-steps", type=int, default=256, help="the completeness sweep's largest step count")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--out", type=Path, default=None, help="the file written (default: docs/bench/<bench>.txt)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    args = ap.parse_args()

    import numpy as np
    import torch

    from asc.explain import explain
    from asc.models import load_model
    from asc.why.attribute import DEFAULT_STEPS, attribute
    from asc.why.targets import token_target
    from benchmarks.report import Report, longest_algorithm, quiet_torch

    report = Report("why", "what attribution costs against the model's forward passes", out=args.out)
    quiet_torch(args.threads)
    source = longest_algorithm()
    bundle = load_model(args.model, device=args.device, dtype=args.dtype)
    dev = bundle.model.device
    ex = explain(bundle, source)
    ids = ex.scores.ids
    last = max(i for i in range(len(ids)) if not np.isnan(ex.scores.logprob[i]))
    target = token_target(bundle, ex, last)

    def sync() -> None:
        if dev.type == "cuda":
            torch.cuda.synchronize()

    def timed(fn):  # type: ignore[no-untyped-def]
        t = time.perf_counter()
        out = fn()
        sync()
        return time.perf_counter() - t, out

    x = torch.from_numpy(ids[:last])[None].to(dev)

    def forward() -> None:
        with torch.inference_mode():
            bundle.model(input_ids=x, use_cache=False, logits_to_keep=1)

    def run(method: str):  # type: ignore[no-untyped-def]
        return lambda: attribute(bundle, source, target, method, explanation=ex)

    run("grad")()  # warm-up
    times: dict[str, list[float]] = {"forward": [], "grad": [], "ig": [], "occlusion": []}
    occ = None
    for _ in range(args.rounds):
        times["forward"].append(timed(forward)[0])
        times["grad"].append(timed(run("grad"))[0])
        times["ig"].append(timed(run("ig"))[0])
        seconds, occ = timed(run("occlusion"))
        times["occlusion"].append(seconds)
    assert occ is not None
    med = {k: statistics.median(v) for k, v in times.items()}
    n_nodes = int((~np.isnan(occ.node_attr)).sum())
    fig = report.figure
    report.line(f"{bundle.name} on {dev}: {len(source.splitlines())}-line function, {len(ids)} tokens, target token "
                f"{last} ({target.text!r}); {args.rounds} rounds, torch threads {torch.get_num_threads()}")
    report.line(f"  one forward pass over the prompt: {fig('forward_s', med['forward'], '.3f')} s")
    report.line(f"  gradient x input: {fig('grad_s', med['grad'], '.3f')} s -> "
                f"{fig('grad_x_forward', med['grad'] / med['forward'], '.2f')}x one forward pass (target <= 3x)")
    report.line(f"  integrated gradients, {DEFAULT_STEPS} steps: {fig('ig_s', med['ig'], '.2f')} s -> "
                f"{fig('ig_x_steps_grad', med['ig'] / (DEFAULT_STEPS * med['grad']), '.2f')}x steps x gradient x "
                "input (target <= 1.1x)")
    report.line(f"  occlusion of {n_nodes} nodes ({occ.steps} distinct variants): "
                f"{fig('occlusion_s', med['occlusion'], '.2f')} s -> "
                f"{fig('occlusion_x_forwards', med['occlusion'] / (n_nodes * med['forward']), '.3f')}x N forward "
                "passes (target <= 0.6x)")
    report.section("completeness")
    report.line("integrated gradients, Gauss-Legendre: |sum - (value - baseline value)| / |value - baseline value| by "
                "step count")
    paths = (("pad", True, "", "the default path: pad baseline, first token held (the attention sink)"),
             ("zero", False, "_textbook", "the textbook path: zero baseline, first token moved too"))
    for baseline, hold, suffix, title in paths:
        report.line(f" {title}")
        reached = []
        for at in (32, 64, 96):
            at = min(at, last)
            while np.isnan(ex.scores.logprob[at]):
                at += 1
            tg = token_target(bundle, ex, at)
            cells, first = [], None
            steps = 8
            while steps <= args.max_steps:
                got = attribute(bundle, source, tg, "ig", steps=steps, baseline=baseline, explanation=ex,
                                hold_sink=hold)
                cells.append(f"{steps}: {got.relative_gap:.3f}")
                if got.relative_gap <= 0.01:
                    first = steps
                    break
                steps *= 2
            reached.append(first)
            report.line(f"  token {at} ({tg.text!r}, value {got.value:.3f}, at the baseline {got.baseline_value:.3f}): "
                        + ", ".join(cells) + f" -> within 1% at {first if first else f'more than {args.max_steps}'}")
        worst = max((r or 2 * args.max_steps) for r in reached)
        report.line(f"  steps reaching 1% on every target: {fig('ig_steps_1pct' + suffix, worst, 'd')}"
                    + (f" (more than {args.max_steps})" if worst > args.max_steps else ""))
    report.write()


if __name__ == "__main__":
    main()
