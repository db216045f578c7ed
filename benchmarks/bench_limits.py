"""`make bench`: the inspector's worst inputs, time and peak memory (issue 28, part 3).

For each shape of pathological code, the deepest input the inspector accepts (as deep as
:data:`asc.syntax.MAX_AST_DEPTH` allows, repeated up to the browser's 60,000-character limit,
``ui.guards.MAX_CHARS``): nested parentheses, nested brackets, a flat ``1+1+...`` chain, one wide list, and the
deepest nesting around a wide list (the most (node, token) pairs an accepted input can have). A fresh subprocess
per row does the inspector's whole "Explain" on a warm process: the explanation (parse, tokenize, model, align,
aggregate), the category chart, the least-confident table, the node picker's labels, both tree figures
(serialized as Streamlit sends them) and the sequence view. Reported: seconds from source text to the last
figure, split into the model's forward passes and the rest; the subprocess's peak resident memory (its own
``resource.getrusage(RUSAGE_SELF).ru_maxrss``, model and interpreter included, nothing of other rows) and the
same after loading the model. An ordinary-code row (real stdlib functions, 60,000 characters) shows what the
model costs on that much text whatever its shape. Then the time to refuse a too-deep input, in process
(:func:`asc.explain.check_source`) and as a user meets it (``python -m asc explain`` exiting 2, interpreter
start included).

Models: tiny-random (the tests' model, registered through ``ASC_MODEL_MODULES``) on every row; a real model (smollm2-135m by default) only on ``--real-inputs`` rows, since
each takes over ten minutes of forward passes on a 2-core CPU. tiny-random (2 layers, a 64-token window: some
2,000 windows at 60,000 characters) runs on one torch thread: on a shared 2-core machine its thousands of tiny
operations stall on thread barriers, seconds of noise that have nothing to do with the input's shape.

Targets (issue 28): under 1 GB and 10 s per accepted input, a refusal under 1 s; PASS/FAIL per row. The
table is printed and written to ``docs/bench/limits.txt`` with the machine, date and commit on top
(:mod:`benchmarks.report`).
"""

from __future__ import annotations

import argparse
import ast
import importlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("ASC_MODEL_MODULES", "tests.support.models")  # registers tiny-random, the tests' model

ROOT = Path(__file__).resolve().parent.parent
LIMIT_GB, LIMIT_S, REFUSE_S = 1.0, 10.0, 1.0


def _line(shape: str, k: int) -> str:
    """One statement of ``shape`` with nesting/length ``k``."""
    if shape == "nested parens":
        return "x = " + "(" * k + "1" + ")" * k
    if shape == "nested brackets":
        return "x = " + "[" * k + "]" * k
    if shape == "binary chain":
        return "x = " + "+".join(["1"] * k)
    if shape == "deep + wide":  # the deepest nesting around a flat list (filled up by inputs(): the most pairs)
        return "x = " + "(" * k + "[1, 1]" + ")" * k
    raise ValueError(shape)


def _deepest(shape: str) -> int:
    """The largest ``k`` whose line :func:`asc.syntax.parse` accepts (binary search on the refusal)."""
    from asc.errors import TooDeepError
    from asc.syntax import parse

    lo, hi = 1, 4096  # lo accepted, hi refused
    while hi - lo > 1:
        mid = (lo + hi) // 2
        try:
            parse(_line(shape, mid))
            lo = mid
        except TooDeepError:
            hi = mid
    return lo


def _fill(line: str, chars: int) -> str:
    """``line`` repeated (one per line) up to ``chars`` characters, cut to fit when one line is longer."""
    n = max(1, chars // (len(line) + 1))
    return ("\n".join([line] * n) + "\n")[:chars]


def inputs(chars: int) -> dict[str, str]:
    """The accepted worst inputs by name (each at most ``chars`` characters, deepest accepted nesting)."""
    from asc.corpus.sources import load_corpus

    out = {}
    for shape in ("nested parens", "nested brackets", "binary chain"):
        k = _deepest(shape)
        out[f"{shape} (depth {k}, repeated)"] = _fill(_line(shape, k), chars)
    wide = "x = [" + ", ".join(["1"] * chars) + "]"
    out["wide list (one line)"] = wide[: chars - 2] + "]\n"
    k = _deepest("deep + wide")
    body = "[" + ", ".join(["1"] * ((chars - 2 * k - 8) // 3)) + "]"
    out[f"deep + wide (depth {k})"] = "x = " + "(" * k + body + ")" * k + "\n"
    code, n = [], 0
    for snip in load_corpus("stdlib"):
        if n + len(snip.source) + 1 > chars:
            break
        code.append(snip.source)
        n += len(snip.source) + 1
    out["ordinary code (stdlib functions)"] = "\n".join(code)
    return out


def child(model: str, path: str) -> None:
    """In a fresh process: the inspector's "Explain" on the file at ``path``; prints one JSON line."""
    from asc.models import load_model
    from asc.viz import category_figure, sequence_html, tree_figure

    bundle = load_model(model)
    if bundle.n_params < 1_000_000:  # tiny-random: threads only add stalls to its tiny ops on a shared CPU
        import torch

        torch.set_num_threads(1)
    source = Path(path).read_text(encoding="utf-8")
    import asc.scores as scores

    model_s = [0.0]
    real_score = scores.score_texts

    def timed_score(*args, **kwargs):
        t = time.perf_counter()
        try:
            return real_score(*args, **kwargs)
        finally:
            model_s[0] += time.perf_counter() - t

    explain_mod = importlib.import_module("asc.explain")  # the module (``asc.explain`` is also the function)

    def inspector(text: str):
        ex = explain_mod.explain(bundle, text)
        category_figure(ex.category_values).to_json()
        ex.weakest_nodes(6)
        labels = {i: f"{i}: {ex.tree.type[i]}  {ex.tree.text(i, limit=40)!r}" for i in range(ex.tree.n_nodes)
                  if ex.tree.named[i] or ex.tree.is_missing[i]}  # the page's node picker
        for view in ("partial", "complete"):
            tree_figure(ex, view, collapse_unary=True).to_json()
        sequence_html(ex)
        return ex, labels

    explain_mod.score_texts = timed_score  # type: ignore[assignment]
    inspector("def f(x):\n    return [x, (x + 1)]\n")  # warm-up, as on a running server: imports, first calls
    model_s[0] = 0.0
    base_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    t0 = time.perf_counter()
    ex, labels = inspector(source)
    total = time.perf_counter() - t0
    print(json.dumps({"seconds": total, "model_seconds": model_s[0], "tokens": ex.scores.n_tokens,
                      "nodes": ex.tree.n_nodes, "depth": ex.tree.n_levels - 1, "bindings": int(ex.alignment.counts().sum()),
                      "base_mb": base_mb, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "labels": len(labels)}))


def _run_child(model: str, source: str) -> dict:
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False, encoding="utf-8") as f:
        f.write(source)
    try:
        out = subprocess.run([sys.executable, __file__, "--child", model, f.name], capture_output=True, text=True,
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=3600)
    finally:
        os.unlink(f.name)
    if out.returncode != 0:
        raise SystemExit(f"child failed ({out.returncode}): {out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])  # peak_mb: the child's own ru_maxrss (RUSAGE_SELF)


def _refusal(chars: int) -> tuple[float, float, str]:
    """(in-process seconds of check_source, CLI wall seconds, CLI stderr) on 60k chars of nested parens."""
    from asc.errors import TooDeepError
    from asc.explain import check_source

    deep = "x = " + "(" * (chars // 2 - 3) + "1" + ")" * (chars // 2 - 3) + "\n"
    t = time.perf_counter()
    try:
        check_source(deep, "python")
        raise SystemExit("the too-deep input was accepted")
    except TooDeepError:
        inproc = time.perf_counter() - t
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False, encoding="utf-8") as f:
        f.write(deep)
    try:
        t = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "asc", "explain", f.name, "--model", "tiny-random"],
                             capture_output=True, text=True, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                             timeout=600)
        wall = time.perf_counter() - t
    finally:
        os.unlink(f.name)
    if out.returncode != 2:
        raise SystemExit(f"the CLI did not refuse the too-deep input (exit {out.returncode}): {out.stderr[-500:]}")
    return inproc, wall, out.stderr.strip()


def browser_limit() -> int:
    """``ui.guards.MAX_CHARS``, read from its source: importing ``ui`` outside the app makes Streamlit's caches
    warn on every import."""
    for node in ast.parse((ROOT / "ui" / "guards.py").read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "MAX_CHARS" for t in node.targets):
            return int(ast.literal_eval(node.value))
    raise SystemExit("ui/guards.py defines no MAX_CHARS")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default="tiny-random,smollm2-135m",
                    help="comma-separated models to explain with (default: %(default)s)")
    ap.add_argument("--real-inputs", default="deep + wide,ordinary code",
                    help="comma-separated input name prefixes a real model explains (each takes over ten minutes "
                         "of forward passes on a 2-core CPU; 'all' for every input; default: %(default)s)")
    ap.add_argument("--out", default=None, help="the file written (default: docs/bench/limits.txt)")
    ap.add_argument("--child", nargs=2, metavar=("MODEL", "FILE"), help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    from asc.syntax import MAX_AST_DEPTH
    from benchmarks.report import Report

    chars = browser_limit()
    report = Report("limits", f"the inspector's worst accepted inputs ({chars:,} characters, AST depth limit "
                    f"{MAX_AST_DEPTH}); targets: < {LIMIT_GB:g} GB and < {LIMIT_S:g} s each, refusal < {REFUSE_S:g} s")
    fig = report.figure
    report.line("total: source text -> explanation, category chart, least-confident table, node picker, both tree "
                "figures (serialized), sequence view, on a warm process; model: the part in the forward passes; rest: "
                "everything else (parse, align, aggregate, figures); pairs: (node, token) bindings; peak: the fresh "
                "subprocess's max RSS (model and interpreter included; base: after loading the model and a warm-up)")
    report.section("table")
    head = (f"{'model':<13} {'input':<38} {'chars':>6} {'tokens':>6} {'nodes':>6} {'depth':>5} {'pairs':>10} "
            f"{'total s':>7} {'model s':>7} {'rest s':>6} {'peak MB':>7} {'base MB':>7}  result")
    report.line(head)
    report.line("-" * len(head))
    cases = inputs(chars)
    real = [p.strip() for p in args.real_inputs.split(",") if p.strip()]
    model_bound = False
    for model in [m.strip() for m in args.models.split(",") if m.strip()]:
        tag = model.split("-")[0]
        worst = {"s": 0.0, "mb": 0.0}
        for name, source in cases.items():
            if model != "tiny-random" and "all" not in real and not any(name.startswith(p) for p in real):
                continue
            row = _run_child(model, source)
            ok = row["seconds"] < LIMIT_S and row["peak_mb"] < LIMIT_GB * 1024
            worst = {"s": max(worst["s"], row["seconds"]), "mb": max(worst["mb"], row["peak_mb"])}
            report.line(f"{model:<13} {name:<38} {len(source):>6} {row['tokens']:>6} {row['nodes']:>6} "
                        f"{row['depth']:>5} {row['bindings']:>10,} {row['seconds']:>7.2f} {row['model_seconds']:>7.2f} "
                        f"{row['seconds'] - row['model_seconds']:>6.2f} {row['peak_mb']:>7.0f} {row['base_mb']:>7.0f}  "
                        f"{'PASS' if ok else 'FAIL'}")
            model_bound |= not ok and row["seconds"] - row["model_seconds"] < LIMIT_S
        if worst["s"]:
            report.line(f"{model:<13} at most {fig(f'{tag}_max_s', worst['s'], '.2f')} s and "
                        f"{fig(f'{tag}_max_peak_mb', worst['mb'], '.0f')} MB peak over its inputs")
    if model_bound:
        report.line("FAIL with a small 'rest s': the model's own cost, the same on ordinary code of as many tokens: its "
                    "forward passes (model s) and its weights and activations (base MB, and peak - base while "
                    "scoring); what the tree adds is the 'rest s' column")
    inproc, wall, message = _refusal(chars)
    report.section("refusal")
    report.line(f"refusal of {chars:,} characters of nested parens: check_source {fig('refusal_ms', inproc * 1000, '.0f')} "
                f"ms in process {'PASS' if inproc < REFUSE_S else 'FAIL'}; `python -m asc explain` exit 2 after "
                f"{fig('refusal_cli_s', wall, '.2f')} s wall, interpreter start included, "
                f"{'PASS' if wall < REFUSE_S else 'FAIL'}")
    report.line(f"  {message}")
    if args.out:
        report.out = Path(args.out)
    report.write()


if __name__ == "__main__":
    main()
