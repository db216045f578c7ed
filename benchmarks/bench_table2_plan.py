"""`make bench` (Table 2 plan): what glueCode's Table 2 costs per item on this CPU, an estimate for the GPU, the commands.

Table 2 (docs/gluecode.md): the stdlib task set at 1,000 items per task (seed 0), its test split, both
embedded models, the three context levels, the 2,048-token window. For each model, level and task (NAME in both
modes) this answers ``--sample`` test items drawn with a seed, with the code the GPU command runs
(:func:`probes.gluecode.zeroshot.predict`), timed as a whole, and counts the tokens of ``--token-sample`` test items'
contexts at that level (cut to the window). An item's cost grows with its context, so the split's seconds per item
are the sample's seconds per context token times the split's mean tokens per item (a ratio estimate).

**GPU estimate** (an estimate, not a measurement: the first GPU command's status prints the seconds per prediction it
measured, which replace it). Each cell's CPU seconds per item are counted in forward passes of the same model over
504 tokens, timed here just before and after the cell (so the machine's load cancels out), and one such pass on the
GPU is taken as SmolLM2's there (``docs/gpu-report.md``, section lens_branch: a 504-token function, H200, bfloat16,
random weights; Gemma's 18 layers take no longer than SmolLM2's 30 when a pass is bound by its kernel launches), with
a floor of two passes per ranked item (the shared prefix, then the candidates). Generated items add 16 greedy steps
at the GPU's measured milliseconds per token (same section, bench_branch), shared by the ``--chunk`` items of a
batch.

**Plan**, one payload per model (a fresh machine for the second model then receives only its own weights): the
wheels' packages (``--site-mib``, as ``make gpu-table2-bundle`` made them), the test items (packed here) and the
model's GGUF file in parts of ``--part-mib``, one per command, and the estimated work in the order the GPU command
runs it (level by level, task by task), at most ``--command-s`` seconds of it per command (the 540-s deadline less
time to receive, unpack and load). Written to ``docs/bench/table2_plan.txt``
(:mod:`benchmarks.report`).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("smollm2-135m", "gemma3-270m")
LEVELS = ("function", "file", "callgraph")


def gpu_figures(report: Path) -> tuple[float, float, str]:
    """The GPU's forward pass over a 504-token function (s) and its greedy step (s) from the GPU report."""
    data = json.loads(report.read_text())
    text = "\n".join(line for s in data["sections"] if s["section"] == "lens_branch" for line in s.get("lines", []))
    forward = re.search(r"one function: forward ([\d.]+) s", text)
    step = re.search(r"\((\d+) ms/token\)", text)
    if not forward or not step:
        raise SystemExit(f"{report}: no lens_branch figures (forward, ms/token): run the GPU report first")
    return float(forward.group(1)), float(step.group(1)) / 1000, f"{data['environment'].get('device')}, {data['date']}"


def forward_504(bundle, rounds: int = 1) -> float:
    """Median seconds of ``rounds`` forward passes over 504 tokens (no cache)."""
    import torch

    ids = torch.randint(0, min(1000, bundle.tokenizer.vocab_size), (1, 504), generator=torch.Generator().manual_seed(0))
    times = []
    with torch.inference_mode():
        for _ in range(rounds):
            t = time.perf_counter()
            bundle.model(ids, use_cache=False)
            times.append(time.perf_counter() - t)
    return statistics.median(times)


def context_tokens(bundle, items, level: str, window: int) -> list[int]:
    texts = [it.context(level) for it in items]
    return [min(len(ids), window) for ids in bundle.tokenizer(texts, add_special_tokens=False)["input_ids"]]


def schedule(cells: list[dict], sizes: list[tuple[str, int]], part_bytes: int, command_s: float) -> list[str]:
    """One line per command: the part it carries and the estimated work it does (cells in the GPU's order; a cell
    may be split between commands). A model's work starts in the command that brings its last part."""
    ends, offset = {}, 0
    for name, size in sizes:
        offset += size
        ends[name.rsplit(".", 1)[0]] = -(-offset // part_bytes)
    n_parts = -(-offset // part_bytes)
    queue = [dict(c, left=c["gpu_s"]) for c in cells]
    lines, command = [], 0
    while queue or command < n_parts:
        command += 1
        budget, done = command_s, []
        while queue and budget > 0 and ends[queue[0]["model"]] <= command:
            cell = queue[0]
            spent = min(budget, cell["left"])
            cell["left"] -= spent
            budget -= spent
            share = "" if cell["left"] <= 1e-9 and spent >= cell["gpu_s"] - 1e-9 else f" {spent / cell['gpu_s']:.0%}"
            done.append(f"{cell['model']} {cell['level']} {cell['task']}{share}")
            if cell["left"] <= 1e-9:
                queue.pop(0)
        carry = f".gpu-part{command}" if command <= n_parts else "nothing new"
        work = f"{command_s - budget:4.0f} s: " + _compact(done) if done else "waits for the parts"
        lines.append(f"command {command:2d} carries {carry:12}  {work}")
    return lines


def _compact(done: list[str]) -> str:
    """'m l A, m l B 40%' -> 'm l: A, B 40%' (one group per model and level)."""
    groups: dict[str, list[str]] = {}
    for d in done:
        model, level, rest = d.split(" ", 2)
        groups.setdefault(f"{model} {level}", []).append(rest)
    return "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--run", type=Path, default=ROOT / "build" / "bench-table2", help="where the task set is kept")
    ap.add_argument("--corpus", default="stdlib")
    ap.add_argument("--size", type=int, default=1000)
    ap.add_argument("--levels", default=",".join(LEVELS), help="context levels (default all three)")
    ap.add_argument("--sample", type=int, default=3, help="items timed per model, level and task")
    ap.add_argument("--token-sample", type=int, default=100, help="items whose context tokens are counted")
    ap.add_argument("--gpu-report", type=Path, default=ROOT / "docs" / "gpu-report.json")
    ap.add_argument("--site-mib", type=float, default=6.4, help="the wheels' packages as the bundle packs them")
    ap.add_argument("--part-mib", type=float, default=55)
    ap.add_argument("--command-s", type=float, default=420, help="seconds of work one command does")
    ap.add_argument("--chunk", type=int, default=64, help="items per chunk on the GPU (its generation batches)")
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()

    from transformers.utils import logging as hf_logging

    from asc.models import EMBEDDED, load_model
    from benchmarks.gpu.bundle import pack_tasks
    from benchmarks.report import Report
    from probes.gluecode.items import TASKS
    from probes.gluecode.likelihood import DEFAULT_MAX_WINDOW, window
    from probes.gluecode.runs import build_or_load, set_name
    from probes.gluecode.zeroshot import predict

    hf_logging.set_verbosity_error()
    report = Report("table2_plan", "glueCode Table 2: CPU cost per item, GPU estimate, commands", out=args.out)
    gpu_forward, gpu_step, gpu_where = gpu_figures(args.gpu_report)
    t = time.perf_counter()
    items = build_or_load(args.run, args.corpus, TASKS, args.size, 0)
    tests = {task: [it for it in task_items if it.split == "test"] for task, task_items in items.items()}
    report.line(f"task set {set_name(args.corpus, args.size, 0)}: test items " + ", ".join(
        f"{t} {len(v)}" for t, v in tests.items()) + f" ({time.perf_counter() - t:.0f} s to build or read)")
    models = args.models.split(",")
    cells, passes = [], {}
    report.section("costs")
    report.line(f"{'model':13} {'level':9} {'task':5} {'mode':8} {'items':>5} {'tokens':>6} {'CPU s/item':>10} "
                f"{'x pass':>6} {'GPU s/item':>10} {'GPU s':>6}")
    for model in models:
        bundle = load_model(model)
        win = window(bundle, DEFAULT_MAX_WINDOW)
        predict(bundle, tests["OPS"][:1], "function")  # warm-up
        passes[model] = [forward_504(bundle, 3)]
        for level in args.levels.split(","):
            for task in TASKS:
                rng = random.Random(f"{task}-{level}")
                timed = rng.sample(tests[task], min(args.sample, len(tests[task])))
                counted = rng.sample(tests[task], min(args.token_sample, len(tests[task])))
                mean_tokens = statistics.mean(context_tokens(bundle, counted, level, win))
                timed_tokens = sum(context_tokens(bundle, timed, level, win))
                for mode in (("generate", "rank") if task == "NAME" else (None,)):
                    before = forward_504(bundle)
                    t = time.perf_counter()
                    preds = predict(bundle, timed, level, **({"name_modes": (mode,)} if mode else {}))
                    seconds = time.perf_counter() - t
                    one_pass = (before + forward_504(bundle)) / 2
                    passes[model].append(one_pass)
                    cpu = seconds / timed_tokens * mean_tokens
                    mode = mode or preds[0].mode
                    units = cpu / one_pass  # forward passes over 504 tokens
                    gpu = max(units, 2) * gpu_forward if mode == "rank" else units * gpu_forward + 16 * gpu_step / args.chunk
                    n = len(tests[task])
                    cells.append({"model": model, "level": level, "task": task if task != "NAME" else f"NAME-{mode[:3]}",
                                  "cpu_s": cpu * n, "gpu_s": gpu * n})
                    report.line(f"{model:13} {level:9} {task:5} {mode:8} {n:5d} {mean_tokens:6.0f} {cpu:10.2f} "
                                f"{units:6.1f} {gpu:10.3f} {gpu * n:6.0f}")
        del bundle
    report.section("totals")
    report.line(f"GPU ({gpu_where}): a forward pass over 504 tokens {gpu_forward:.2f} s, a greedy step "
                f"{gpu_step * 1000:.0f} ms; {args.sample} items timed per cell")
    for model in models:
        key = model.split("-")[0]
        low, high = min(passes[model]), max(passes[model])
        report.line(f"{model}: a forward pass over 504 tokens here {report.figure(key + '_pass_s', statistics.median(passes[model]), '.2f')} s "
                    f"(median; {low:.2f}-{high:.2f} s over the run as the load changed)")
    for model in models:
        cpu_h = sum(c["cpu_s"] for c in cells if c["model"] == model) / 3600
        gpu_s = sum(c["gpu_s"] for c in cells if c["model"] == model)
        key = model.split("-")[0]
        report.line(f"{model}: {report.figure(key + '_cpu_h', cpu_h, '.1f')} h on this CPU, about "
                    f"{report.figure(key + '_gpu_s', gpu_s, '.0f')} s on the GPU (estimate)")
    with tempfile.TemporaryDirectory() as tmp:
        tasks_bytes = pack_tasks(args.run, set_name(args.corpus, args.size, 0), Path(tmp) / "t.tar.xz").stat().st_size
    common = [("site.tar.xz", int(args.site_mib * 2**20)), ("tasks.tar.xz", tasks_bytes)]
    report.section("plan")
    report.line(f"one payload per model (site.tar.xz {args.site_mib:.1f} MiB, tasks.tar.xz {tasks_bytes / 2**20:.1f} MiB, "
                f"its GGUF), parts of {args.part_mib:g} MiB, at most {args.command_s:.0f} s of work per command:")
    for model in models:
        key = model.split("-")[0]
        gguf = EMBEDDED[model].locate().stat().st_size  # type: ignore[misc]
        lines = schedule([c for c in cells if c["model"] == model], [*common, (f"{model}.gguf", gguf)],
                         int(args.part_mib * 2**20), args.command_s)
        report.line(f"{model} ({gguf / 2**20:.1f} MiB; make gpu-table2-bundle MODELS={model}): "
                    f"{report.figure(key + '_commands', len(lines))} commands")
        for line in lines:
            report.line("  " + line)
    report.write()


if __name__ == "__main__":
    main()
