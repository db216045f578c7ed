"""Activation patching (issue 30): what a sweep costs in forward passes, and hooks against nnsight, in one run.

On SmolLM2 (``--model``), a 6-line function and two corruptions built by hand (no tree-sitter corruption module
needed): a literal (``0`` -> ``1``, one span) and a rename of the loop variable to a name of as many tokens.

1. The issue's sweep, every layer over a corruption's spans (the literal: one span, so the span, its category and
   all spans together are one row, run once per layer), by :func:`asc.why.patching.patch` (cached method: each
   patched run starts at its layer from the stored activations), in units of one full forward pass of the snippet
   timed in the same rounds. Target <= layers / 2 + 2. ``patch``'s own count of the work (``cost``) is printed beside it.
2. One patching sweep three ways, the same rows (the rename's two spans, its category, all together; every layer):
   the cached method, PyTorch forward hooks (a full forward pass per layer batch, a pre-hook writing the clean
   vectors into the layer's input) and nnsight 0.8.1 (the same write through ``model.model.layers[l].input`` in a
   trace). The largest difference of the three's log-probabilities and each one's time.
3. The rename with ``spans="after"`` (every named leaf from the first edit to the target): the time per column.

Rounds interleave the kinds of call (``--rounds``); medians are printed. Written to ``docs/bench/patching.txt``
by default; ``--out`` elsewhere (this benchmark is not part of ``make bench`` yet).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SNIPPET = ("def count_chars(string, character):\n    count = 0\n    for letter in string:\n"
           "        if letter == character:\n            count = count + 1\n    return count\n")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2-135m")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", type=Path, default=None, help="the file written (default: docs/bench/patching.txt)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's own)")
    args = ap.parse_args()

    import numpy as np
    import torch

    from asc.arch import decoder_layers
    from asc.models import load_model
    from asc.scores import encode
    from asc.why.corrupt import Corruption, Edit, corrupt
    from asc.why.patching import align_tokens, default_target, patch
    from asc.why.residual import record
    from benchmarks.report import Report, quiet_torch

    report = Report("patching", "what activation patching costs, and PyTorch hooks against nnsight", out=args.out)
    quiet_torch(args.threads)
    bundle = load_model(args.model)
    n_layers = bundle.n_layers
    at = SNIPPET.index("0\n")
    literal = Corruption("literal", "0 to 1", SNIPPET, SNIPPET[:at] + "1" + SNIPPET[at + 1:], (Edit(at, at + 1, "0", "1"),))
    n_clean = len(encode(bundle, SNIPPET)[0])
    renamed = next(c for c in (corrupt(SNIPPET, f"rename:letter:{new}") for new in ("item", "elem", "char", "value", "entry"))
                   if len(encode(bundle, c.corrupted)[0]) == n_clean)
    bad_ids = encode(bundle, renamed.corrupted)[0]
    target = default_target(bundle, SNIPPET)

    def forward() -> float:
        x = torch.as_tensor(encode(bundle, literal.corrupted)[0])[None]
        t = time.perf_counter()
        with torch.inference_mode():
            bundle.model(input_ids=x, use_cache=False)
        return time.perf_counter() - t

    def timed(fn):  # (seconds, result)
        t = time.perf_counter()
        out = fn()
        return time.perf_counter() - t, out

    # the rows of sweep 2: the rename's spans, as patch() builds them (pairs clean index -> corrupted index)
    probe = patch(bundle, renamed, target, layers=[0])
    aligned = align_tokens(renamed, encode(bundle, SNIPPET), encode(bundle, renamed.corrupted))
    _, starts, ends, _ = encode(bundle, renamed.corrupted)
    spans = [renamed.corrupted_span(e) for e in renamed.edits]
    edit_tokens = [np.flatnonzero((starts < b) & (a < ends)) for a, b in spans]
    rows_pos = [*edit_tokens, np.concatenate(edit_tokens)]
    token = int(bad_ids[probe.target["corrupted_index"]])
    position = probe.target["corrupted_index"] - 1
    assert (aligned == np.arange(len(aligned))).all()

    def by_runs(method: str) -> np.ndarray:
        clean, bad = record(bundle, encode(bundle, SNIPPET)[0], method), record(bundle, bad_ids, method)
        return np.array([bad.run(layer, [(p, clean.inputs[layer][p]) for p in rows_pos], position, token)
                         for layer in range(n_layers)])

    def by_nnsight(upto: int = n_layers) -> np.ndarray:
        from nnsight import NNsight

        traced = NNsight(bundle.model)
        _, layers = decoder_layers(bundle.model)
        clean = record(bundle, encode(bundle, SNIPPET)[0], "hooks")
        path = next(name for name, module in bundle.model.named_modules() if module is layers)
        x = torch.as_tensor(bad_ids)[None].expand(len(rows_pos), -1)
        out = []
        for layer in range(upto):
            envoy = traced
            for part in path.split("."):
                envoy = getattr(envoy, part)
            with torch.inference_mode(), traced.trace(x):
                h = envoy[layer].input
                for b, p in enumerate(rows_pos):
                    h[b, torch.as_tensor(p)] = clean.inputs[layer][p]
                logits = traced.output.logits[:, position].save()
            out.append(torch.log_softmax(logits.float(), -1)[:, token].double().numpy())
        return np.array(out)

    forward(), by_nnsight(1)  # warm-up
    times: dict[str, list[float]] = {k: [] for k in ("forward", "literal", "cached", "hooks", "nnsight", "after")}
    results: dict[str, np.ndarray] = {}
    costs: dict[str, float] = {}
    for _ in range(args.rounds):
        times["forward"].append(statistics.median(forward() for _ in range(3)))
        seconds, lit = timed(lambda: patch(bundle, literal, target))
        times["literal"].append(seconds)
        costs["literal"] = lit.cost
        for kind, fn in (("cached", lambda: by_runs("cached")), ("hooks", lambda: by_runs("hooks")),
                         ("nnsight", by_nnsight)):
            seconds, results[kind] = timed(fn)
            times[kind].append(seconds)
        seconds, after = timed(lambda: patch(bundle, renamed, target, spans="after"))
        times["after"].append(seconds)
        costs["after"], costs["after_columns"] = after.cost, len(after.node_ids)
    med = {k: statistics.median(v) for k, v in times.items()}
    unit = med["forward"]
    fig = report.figure
    report.line(f"{bundle.name} ({n_layers} layers): {len(SNIPPET.splitlines())}-line function, {n_clean} tokens; "
                f"{args.rounds} rounds, torch threads {torch.get_num_threads()}; one forward pass "
                f"{fig('forward_ms', unit * 1000, '.1f')} ms")
    report.section("sweep")
    report.line(f"  every layer over the literal's span: {fig('sweep_s', med['literal'], '.2f')} s = "
                f"{fig('sweep_forwards', med['literal'] / unit, '.1f')} forward passes (target <= layers / 2 + 2 = "
                f"{n_layers / 2 + 2:g}); patch() counts {costs['literal']:.1f} (layers run, output layer excluded)")
    report.line(f"  rename, spans='after' ({costs['after_columns']} columns): {med['after']:.2f} s = "
                f"{fig('after_forwards_per_column', (med['after'] / unit - 2) / costs['after_columns'], '.1f')} forward "
                f"passes a column beyond the two runs")
    report.section("hooks_vs_nnsight")
    diff = max(float(np.abs(results[a] - results[b]).max()) for a, b in (("cached", "hooks"), ("hooks", "nnsight")))
    report.line(f"  one sweep, {len(rows_pos)} rows x {n_layers} layers (the rename's spans): cached "
                f"{fig('cached_s', med['cached'], '.2f')} s, PyTorch hooks {fig('hooks_s', med['hooks'], '.2f')} s, "
                f"nnsight {fig('nnsight_s', med['nnsight'], '.2f')} s; largest difference {diff:.1e} nats")
    report.line(f"  hooks / cached {fig('hooks_x_cached', med['hooks'] / med['cached'], '.2f')}x, nnsight / hooks "
                f"{fig('nnsight_x_hooks', med['nnsight'] / med['hooks'], '.2f')}x")
    report.write()


if __name__ == "__main__":
    main()
