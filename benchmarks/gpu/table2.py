"""glueCode's Table 2 on the GPU machine, over as many commands of at most 10 minutes as it takes (issue 31).

Table 2: the stdlib task set at 1,000 items per task, its test split, both embedded models with their real weights,
the three context levels, the 2,048-token window (docs/gluecode.md). ``make gpu-table2-bundle`` cuts
what the GPU machine lacks (three wheels' packages, the test items, the GGUF files: 344 MiB for both models, 103 MiB
for SmolLM2 alone, ``MODELS=...``) into parts of 55 MiB, ``.gpu-part1/`` ... (:mod:`benchmarks.gpu.parts`), and each
command carries one. ``benchmarks/gpu/table2.sh`` runs this script there; each command:

1. receives the parts it carries into ``--work`` (default ``/tmp/asc-table2``, which stays while the machine is
   held: the device machine keeps files between back-to-back commands and loses them once it is given back) and
   puts together every file whose parts are all there (SHA-256 checked): ``site.tar.xz`` (the wheels the
   machine lacks, unpacked, into ``<work>/site``), ``tasks.tar.xz`` (the test items, into the run folder ``<work>/run``), ``<model>.gguf`` (the
   real weights, quantized: de-quantized on first load into ``<work>/cache``) or ``<model>.tar`` (a model folder,
   the dry runs' tiny models);
2. merges the results an earlier command sent back (``--carried``, default ``.gpu-table2/table2-results.tar.gz``:
   copy ``$OUT``'s file there when a machine is given back between commands) into the run folder, item by item;
3. runs, in a worker process, every model whose weights are whole, in the payload's order, with
   :func:`probes.gluecode.runs.run_gluecode` (the ``python -m probes gluecode`` code path: predictions written
   atomically after every chunk of ``--chunk`` items, items already answered skipped), stopping between chunks
   when the deadline (``--deadline`` seconds after the command started) leaves less than twice the longest chunk
   so far (:class:`Deadline`);
4. writes into ``--out`` (``$OUT``): ``table2-results.tar.gz`` (every model's predictions, also every 30 s while the
   worker runs, so a command killed at its limit still sends back what it answered), ``table2-status.md`` and
   ``.json`` (parts held, predictions done and left per model, level and task, this command's seconds per
   prediction and the time left at those rates, what to carry next) and ``table2.txt`` (the Table 2 so far).

Here, tests/benchmarks/test_gpu_table2.py runs the same script on the CPU with tiny models, across commands.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from benchmarks.gpu import parts  # noqa: E402  (stdlib only: runs before the wheels are installed)

SITE_ARCHIVE = "site.tar.xz"
TASKS_ARCHIVE = "tasks.tar.xz"
RESULTS = "table2-results.tar.gz"
CARRIED = ROOT / ".gpu-table2" / RESULTS
TASKS = ("NPATH", "OPS", "NAME", "CALL", "NULL")  # probes.gluecode.items.TASKS, in its order (not imported: stdlib)
LEVELS = ("function", "file", "callgraph")
PACK_EVERY_S = 30


class Deadline:
    """``should_stop()`` for :func:`~probes.gluecode.runs.run_gluecode`: true once the time left before ``end`` is
    under twice the longest chunk seen so far (the time between two calls), and never under ``least`` seconds.
    :meth:`restart` forgets the last call (a model load is no chunk)."""

    def __init__(self, end: float, least: float = 20.0, clock: Callable[[], float] = time.time) -> None:
        self.end, self.least, self.clock = end, least, clock
        self.longest = 0.0
        self.last: float | None = None
        self.stopped = False

    def restart(self) -> None:
        self.last = None

    def left(self) -> float:
        return self.end - self.clock()

    def should_stop(self) -> bool:
        now = self.clock()
        if self.last is not None:
            self.longest = max(self.longest, now - self.last)
        self.last = now
        self.stopped = self.end - now < max(self.least, 2 * self.longest)
        return self.stopped


# ------------------------------------------------------------------------------------------------ receiving


def _unpack(work: Path, held: parts.Held) -> list[str]:
    """Unpack the whole files of the payload once: the wheels' packages, the tasks into the run folder, model folders.
    Returns the models whose weights are whole, in the payload's order."""
    payload, marks = work / "payload", work / "unpacked.json"
    done: dict[str, str] = json.loads(marks.read_text()) if marks.is_file() else {}
    models = []
    for entry in held.manifest["files"]:
        name, sha = entry["name"], entry["sha256"]
        if name not in held.files:
            continue
        if name.endswith((".gguf", ".tar")):
            models.append(name)
        if done.get(name) == sha:
            continue
        if name == SITE_ARCHIVE:
            shutil.rmtree(work / "site", ignore_errors=True)
            with tarfile.open(payload / name) as tar:
                tar.extractall(work / "site", filter="data")
        elif name == TASKS_ARCHIVE:
            with tarfile.open(payload / name) as tar:
                tar.extractall(work / "run", filter="data")
        elif name.endswith(".tar"):
            folder = work / "models" / name[: -len(".tar")]
            shutil.rmtree(folder, ignore_errors=True)
            with tarfile.open(payload / name) as tar:
                tar.extractall(folder, filter="data")
        done[name] = sha
        marks.write_text(json.dumps(done))
    return models


def _key(line: str) -> tuple[str, str]:
    row = json.loads(line)
    return row["item_id"], row["mode"]


def merge_results(archive: Path, run: Path) -> int:
    """Add the predictions in ``archive`` (a results tar) that ``run`` lacks, item by item (other files: where
    missing); returns how many predictions were added."""
    added = 0
    with tempfile.TemporaryDirectory() as tmp, tarfile.open(archive) as tar:
        tar.extractall(tmp, filter="data")
        for path in sorted(p for p in Path(tmp).rglob("*") if p.is_file()):
            target = run / path.relative_to(tmp)
            target.parent.mkdir(parents=True, exist_ok=True)
            if path.suffix != ".jsonl":
                if not target.is_file():
                    shutil.copyfile(path, target)
                continue
            have = target.read_text(encoding="utf-8").splitlines() if target.is_file() else []
            keys = {_key(line) for line in have if line.strip()}
            new = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip() and _key(line) not in keys]
            if new:
                tmp_file = target.with_name(f".{target.name}.tmp")
                tmp_file.write_text("".join(line + "\n" for line in [*have, *new]), encoding="utf-8")
                os.replace(tmp_file, target)
                added += len(new)
    return added


def pack_results(run: Path, dest: Path) -> None:
    """Every model's predictions under ``run`` (not the task set) as ``dest`` (tar, gzip), atomically."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.with_name(f".{dest.name}.tmp")
    with tarfile.open(tmp, "w:gz") as tar:
        for folder in sorted(p for p in run.iterdir() if p.is_dir() and p.name != "tasks") if run.is_dir() else []:
            tar.add(folder, arcname=folder.name)
    os.replace(tmp, dest)


# ------------------------------------------------------------------------------------------------ progress


def _task_set(run: Path) -> str | None:
    sets = sorted(p.name for p in (run / "tasks").glob("*") if p.is_dir())
    return sets[0] if sets else None


def progress(run: Path, models: list[str]) -> list[dict[str, Any]]:
    """Per model, level and task: predictions expected (test items; NAME twice, generated and ranked), done, and
    their mean seconds (as measured where they were made)."""
    task_set = _task_set(run)
    if task_set is None:
        return []
    rows = []
    for task in TASKS:
        path = run / "tasks" / task_set / f"{task}.jsonl"
        lines = path.read_text(encoding="utf-8").splitlines()[1:] if path.is_file() else []
        n_test = sum(1 for line in lines if line.strip() and json.loads(line).get("split") == "test")
        for model in models:
            for level in LEVELS:
                pred = run / model / task_set / f"{task}-{level}.jsonl"
                got = [json.loads(x) for x in pred.read_text(encoding="utf-8").splitlines() if x.strip()] \
                    if pred.is_file() else []
                seconds = [g.get("seconds", 0.0) for g in got if not g.get("skipped")]
                rows.append({"model": model, "level": level, "task": task, "expected": n_test * (2 if task == "NAME" else 1),
                             "done": len(got), "s_per_prediction": sum(seconds) / len(seconds) if seconds else None})
    return rows


def left_seconds(rows: list[dict[str, Any]]) -> float | None:
    """Seconds the predictions left would take at the rates measured so far: a cell's own seconds per prediction;
    a cell without one takes the slowest measured of its model and task, else of its model (None: nothing measured)."""
    total = 0.0
    for r in rows:
        left = max(0, r["expected"] - r["done"])
        if not left:
            continue
        same = [x["s_per_prediction"] for x in rows if x["model"] == r["model"] and x["s_per_prediction"] is not None]
        task = [x["s_per_prediction"] for x in rows if x["model"] == r["model"] and x["task"] == r["task"]
                and x["s_per_prediction"] is not None]
        rate = r["s_per_prediction"] if r["s_per_prediction"] is not None else max(task or same or [float("nan")])
        if rate != rate:
            return None
        total += left * rate
    return total


def status_text(status: dict[str, Any]) -> str:
    """The status as Markdown: parts, what this command did, predictions done / expected, what is left."""
    lines = ["# glueCode Table 2 on the GPU: status", "", f"- date: {status['date']}; command: {status['seconds']:.0f} s, "
             f"of which receiving and unpacking {status['receive_s']:.0f} s ({status['device']})"]
    held = status.get("parts")
    if held:
        lines.append(f"- payload {held['payload']}: parts {', '.join(map(str, held['held'])) or 'none'} of "
                     f"{held['n_parts']} held; whole: {', '.join(held['files']) or 'nothing yet'}")
        for name, need in held["needs"].items():
            lines.append(f"  - {name} needs parts {', '.join(map(str, need))}")
        lines += [f"  - refused: {r}" for r in held["refused"]]
    else:
        lines.append("- no parts held: carry .gpu-part1 (make gpu-table2-bundle made them)")
    if status.get("merged"):
        lines.append(f"- merged {status['merged']} predictions from {status['carried']}")
    if status.get("worker"):
        lines.append(f"- worker: {status['worker']}")
    rows = status["progress"]
    if rows:
        lines += ["", "| model | level | " + " | ".join(TASKS) + " | s per prediction |", "|---|---|" + "---|" * (len(TASKS) + 1)]
        for model in dict.fromkeys(r["model"] for r in rows):
            for level in LEVELS:
                cells = {r["task"]: r for r in rows if r["model"] == model and r["level"] == level}
                rates = [f"{t} {c['s_per_prediction']:.3f}" for t, c in cells.items() if c["s_per_prediction"] is not None]
                lines.append(f"| {model} | {level} | " + " | ".join(f"{cells[t]['done']}/{cells[t]['expected']}" for t in TASKS)
                             + f" | {', '.join(rates) or '-'} |")
    left, rated = status["left"], status["left_seconds"]
    lines += ["", f"- left: {left:,} predictions" + (f"; about {rated:,.0f} s at the seconds per prediction above (a "
                                                       "cell without one at the slowest of its task, else of its model)"
                                                       if left and rated is not None else "")]
    lines.append(f"- next: {status['next']}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------------------------------------ the worker


def answer(run: Path, models: list[tuple[str, str]], deadline: Deadline, *, device: str, dtype: str, chunk: int,
           batch_tokens: int, max_window: int, least_model: float = 60.0, out: Path | None = None) -> None:
    """Answer the task set under ``run`` with each (name, weights path) in ``models`` until done or ``deadline``
    (a model is loaded only with ``least_model`` seconds left: a first load de-quantizes); then write the Table 2
    of what is there into ``out/table2.txt``."""
    import gc

    import torch
    from transformers.utils import logging as hf_logging

    from asc.models import load_model
    from probes.gluecode.items import load_items
    from probes.gluecode.runs import load_predictions, run_gluecode, table2, task_file
    from probes.gluecode.zeroshot import accuracy_table

    task_set = _task_set(run)
    if task_set is None:
        raise SystemExit(f"no task set under {run / 'tasks'}: carry .gpu-part1 (it holds tasks.tar.xz)")
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()  # the de-quantization's bars would fill the output the device tool returns
    items = {t: load_items(task_file(run, task_set, t))[1] for t in TASKS if task_file(run, task_set, t).is_file()}
    said: set[str] = set()

    def say(text: str) -> None:
        print(f"[{deadline.left():4.0f} s left] {text}", flush=True)

    def stage_done(stage: str, done: int, total: int, name: str) -> None:
        if done == total and f"{name} {stage}" not in said:
            said.add(f"{name} {stage}")
            say(f"{name}: {stage} {done}/{total}")

    for name, path in models:
        if deadline.left() < max(deadline.least, least_model):
            say(f"{name}: not started (a model is loaded with {least_model:.0f} s left at least)")
            break
        t0 = time.time()
        bundle = load_model(path, device=device, dtype=dtype)
        say(f"{name}: loaded in {time.time() - t0:.1f} s on {bundle.device} ({bundle.dtype})")
        deadline.restart()
        run_gluecode(bundle, items, run, task_set=task_set, chunk=chunk, should_stop=deadline.should_stop,
                     max_window=max_window, batch_tokens=batch_tokens,
                     on_progress=lambda stage, done, total, n=name: stage_done(stage, done, total, n))
        if deadline.stopped:
            say(f"{name}: stopped for the deadline (the longest chunk took {deadline.longest:.0f} s)")
        del bundle
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        if deadline.stopped:
            break
    predictions = load_predictions(run, task_set)
    if out is not None and predictions:
        text = table2(accuracy_table(predictions)).to_string(index=False, float_format=lambda v: f"{v:.3f}", na_rep="-")
        (out / "table2.txt").write_text(f"glueCode Table 2 so far ({task_set}, test split):\n\n{text}\n")


# ------------------------------------------------------------------------------------------------ the command


def _options(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=Path("gpu-table2"), help="where the results and the status go ($OUT)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/asc-table2"), help="parts, payload, run folder (kept "
                    "while the machine is held)")
    ap.add_argument("--parts", type=Path, default=ROOT, help="the folder holding the carried .gpu-part<i>/ folders")
    ap.add_argument("--carried", type=Path, action="append", help=f"results sent back earlier (default {CARRIED})")
    ap.add_argument("--deadline", type=float, default=540, help="seconds the command may take (default 540 of 600)")
    ap.add_argument("--started", type=float, default=None, help="when the command started (epoch seconds)")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="float32", help="float32 (default: the CPU runs' numbers) or bfloat16")
    ap.add_argument("--chunk", type=int, default=64, help="items answered between two writes (default 64)")
    ap.add_argument("--batch-tokens", type=int, default=32768, help="tokens one forward call may hold")
    ap.add_argument("--max-window", type=int, default=2048, help="the context window (Table 2: 2,048)")
    ap.add_argument("--least", type=float, default=20.0, help="seconds a chunk needs at least to be started")
    ap.add_argument("--least-model", type=float, default=60.0, help="seconds left to start loading a model")
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--in-process", action="store_true", help=argparse.SUPPRESS)  # tests: the worker in this process
    ap.add_argument("--models", help=argparse.SUPPRESS)  # the worker's: name=path,...
    return ap.parse_args(argv)


def _worker(args: argparse.Namespace, env: dict[str, str], models: list[tuple[str, str]]) -> str:
    """Run the worker until it ends or the deadline (and a grace) passes, packing results every 30 s."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--models",
           ",".join(f"{n}={p}" for n, p in models), "--work", str(args.work), "--out", str(args.out),
           "--deadline", str(args.deadline), "--started", str(args.started), "--device", args.device,
           "--dtype", args.dtype, "--chunk", str(args.chunk), "--batch-tokens", str(args.batch_tokens),
           "--max-window", str(args.max_window), "--least", str(args.least), "--least-model", str(args.least_model)]
    proc = subprocess.Popen(cmd, env=env, cwd=ROOT)
    end = args.started + args.deadline + 30
    while True:
        try:
            code = proc.wait(timeout=PACK_EVERY_S)
            return "finished" if code == 0 else f"failed (exit {code}; its output is above)"
        except subprocess.TimeoutExpired:
            pack_results(args.work / "run", args.out / RESULTS)
            if time.time() > end:
                proc.kill()
                proc.wait()
                return "killed 30 s after the deadline (a chunk or a model load ran too long: lower --chunk)"


def _answer(args: argparse.Namespace, models: list[tuple[str, str]], clock: Callable[[], float]) -> None:
    answer(args.work / "run", models, Deadline(args.started + args.deadline, args.least, clock), device=args.device,
           dtype=args.dtype, chunk=args.chunk, batch_tokens=args.batch_tokens, max_window=args.max_window,
           least_model=args.least_model, out=args.out)


def main(argv: list[str] | None = None, clock: Callable[[], float] = time.time) -> int:
    args = _options(argv)
    args.started = args.started or clock()
    args.out.mkdir(parents=True, exist_ok=True)
    run = args.work / "run"
    if args.worker:
        pairs = [(n, p) for n, p in (x.split("=", 1) for x in args.models.split(",") if x)]
        _answer(args, pairs, clock)
        return 0
    status: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": args.device}
    held = parts.receive(parts.part_folders(args.parts), args.work / "store")
    names: list[str] = []
    if held is not None:
        parts.assemble(args.work / "store", held, args.work / "payload")
        names = _unpack(args.work, held)
        status["parts"] = {"payload": held.manifest["payload"], "n_parts": held.n_parts, "held": held.parts,
                           "files": held.files, "needs": held.needs, "refused": held.refused}
    status["receive_s"] = round(clock() - args.started, 1)
    print(f"[{status['receive_s']:4.0f} s] parts received and unpacked", flush=True)
    merged = 0
    for carried in args.carried or [CARRIED]:
        if carried.is_file():
            merged += merge_results(carried, run)
            status["carried"] = str(carried)
    status["merged"] = merged
    models = [(n.rsplit(".", 1)[0], str(args.work / "payload" / n) if n.endswith(".gguf") else
               str(args.work / "models" / n[: -len(".tar")])) for n in names]
    before = progress(run, [m for m, _ in models])
    todo = [(m, p) for m, p in models if any(r["done"] < r["expected"] for r in before if r["model"] == m)]
    if todo and _task_set(run):
        site = args.work / "site"
        env = {**os.environ, "ASC_CACHE_DIR": str(args.work / "cache"), "HF_HUB_OFFLINE": "1",
               "PYTHONPATH": os.pathsep.join([*([str(site)] if site.is_dir() else []), str(ROOT),
                                              os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
        if args.in_process:
            _answer(args, todo, clock)
            status["worker"] = "finished (in this process)"
        else:
            status["worker"] = _worker(args, env, todo)
    pack_results(run, args.out / RESULTS)
    rows = progress(run, [m for m, _ in models])
    status["progress"] = rows
    status["left"] = sum(max(0, r["expected"] - r["done"]) for r in rows)
    status["left_seconds"] = left_seconds(rows)
    missing = held.missing_parts() if held is not None else [1]
    if missing:
        status["next"] = f"carry .gpu-part{missing[0]} (and .gpu-table2 if the machine was given back)"
    elif status["left"]:
        status["next"] = "run again (carry .gpu-table2 if the machine was given back: then every part is needed again)"
    else:
        status["next"] = (f"done: every prediction of {', '.join(m for m, _ in models)}; keep {RESULTS} in .gpu-table2/ "
                          "and extract it into the run folder here (docs/models.md, 'GPU report')")
    status["seconds"] = clock() - args.started
    (args.out / "table2-status.json").write_text(json.dumps(status, indent=1))
    text = status_text(status)
    (args.out / "table2-status.md").write_text(text)
    print(text, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
