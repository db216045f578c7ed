"""`make bench` (BLANCA): the cost of each task: building it, embedding its texts, fine-tuning on it.

Builds (or reads, under ``build/bench-blanca``) the standard-library task set, then for each task times:

- **build**: the task's builder alone (R, L, F from the documentation sources; H imports the standard library's
  modules; U scans its source with ``ast``), measured once when the set is first built (recorded in
  ``build-seconds.json``);
- **embed**: the task's distinct texts embedded by each model, no cache (texts per second, and seconds per item),
  in units of MiniLM's cost on the same texts, the ratio that travels between machines;
- **fine-tune**: MiniLM trained on ``--pairs`` pairs of the task (seconds per 100 pairs), no evaluation.

Scores are not kept: this measures cost, not quality (docs/blanca.md's reproduction has the numbers). Written to
``docs/bench/blanca.txt`` (:mod:`benchmarks.report`); docs/blanca.md quotes it.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")  # saving a fine-tuned model draws a shard bar


def build_seconds(out: Path) -> dict[str, float]:
    """Each task built alone (only when the set does not exist yet); the times are kept beside the set."""
    from probes.blanca.build import BLANCA_TASKS, blanca_set_name, build_task_set

    record = out / "build-seconds.json"
    if record.exists() and (out / "tasks" / blanca_set_name()).is_dir():
        return json.loads(record.read_text())
    times = {}
    for task in BLANCA_TASKS:
        t = time.perf_counter()
        build_task_set(out, [task])
        times[task] = time.perf_counter() - t
    record.write_text(json.dumps(times))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", action="append", help="models to embed with (default minilm-l6, smollm2-135m)")
    parser.add_argument("--out", default="build/bench-blanca", help="where the task set is kept")
    parser.add_argument("--texts", type=int, default=200, help="texts embedded per task (the first ones)")
    parser.add_argument("--pairs", type=int, default=96, help="pairs fine-tuned on per task")
    args = parser.parse_args()

    from transformers.utils import logging as hf_logging

    from asc.models import load_model
    from benchmarks.report import Report
    from probes.blanca.build import build_task_set
    from probes.blanca.embed import embed_texts
    from probes.blanca.evaluate import item_texts
    from probes.blanca.finetune import finetune

    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    report = Report("blanca", "BLANCA's cost per task: building it, embedding its texts, fine-tuning MiniLM on it")
    fig = report.figure
    out = Path(args.out)
    built = build_seconds(out)
    task_set = build_task_set(out)
    texts = {t: item_texts(items)[: args.texts] for t, items in task_set.items.items()}
    report.section("build")
    report.line(f"{'task':4} {'items':>6} {'texts':>6} {'build s':>8}")
    for task, items in task_set.items.items():
        report.line(f"{task:4} {len(items):6d} {fig(f'{task.lower()}_texts', len(item_texts(items)), '6d')} "
                    f"{fig(f'{task.lower()}_build_s', built.get(task, float('nan')), '8.1f')}")
    distinct = {text for items in task_set.items.values() for text in item_texts(items)}
    report.line(f"all  {sum(map(len, task_set.items.values())):6d} {fig('texts', len(distinct), '6d')} "
                f"{fig('build_s', sum(built.values()), '8.1f')}")
    models = args.model or ["minilm-l6", "smollm2-135m"]
    base: dict[str, float] = {}
    report.section("embed")
    report.line(f"embedding {args.texts} texts per task, no cache:")
    report.line(f"{'model':14} {'task':4} {'texts/s':>8} {'s/item':>7} {'x MiniLM':>9}")
    for name in models:
        bundle = load_model(name)
        embed_texts(bundle, texts["H"][:8])  # warm-up
        whole = 0.0
        for task, chosen in texts.items():
            t = time.perf_counter()
            embed_texts(bundle, chosen)
            seconds = time.perf_counter() - t
            if name == "minilm-l6":
                base[task] = seconds
            # an item needs its distinct texts once: seconds per item over the whole task at this rate
            per_item = seconds / len(chosen) * len(item_texts(task_set.items[task])) / len(task_set.items[task])
            ratio = seconds / base[task] if task in base else float("nan")
            key = f"{name.split('-')[0]}_{task.lower()}"
            report.line(f"{name:14} {task:4} {fig(key + '_texts_per_s', len(chosen) / seconds, '8.1f')} "
                        f"{fig(key + '_s_per_item', per_item, '7.3f')} {fig(key + '_x_minilm', ratio, '9.1f')}")
            whole += len(item_texts(task_set.items[task])) / (len(chosen) / seconds)
        report.line(f"{name:14} all  every text of the five tasks at these rates: "
                    f"{fig(name.split('-')[0] + '_all_texts_s', whole, '.0f')} s")
    report.section("finetune")
    report.line(f"fine-tuning MiniLM on {args.pairs} pairs per task (1 epoch, batch 16, 128 tokens):")
    report.line(f"{'task':4} {'pairs':>6} {'s':>7} {'s/100 pairs':>12}")
    for task, items in task_set.items.items():
        with tempfile.TemporaryDirectory() as tmp:
            train = [it for it in items if it.split == "train"]
            t = time.perf_counter()
            result = finetune("minilm-l6", {task: train}, Path(tmp) / "ft", max_pairs=args.pairs)
            seconds = time.perf_counter() - t
            pairs = result.pairs[task]
            report.line(f"{task:4} {pairs:6d} {fig(f'finetune_{task.lower()}_s', seconds, '7.1f')} "
                        f"{fig(f'finetune_{task.lower()}_s_per_100', seconds / pairs * 100, '12.1f')}")
    report.write()


if __name__ == "__main__":
    main()
