"""The architecture matrix as a table: every feature on a tiny random model of each family the model adapter knows.

Runs the checks of ``tests/asc/test_arch_matrix.py`` (the same functions, from ``tests/support/arch_matrix.py``:
AsC-Eval scores, the logit lens's last layer against the output, gradient x input, integrated gradients'
completeness, occlusion, activation patching of the whole residual stream, a branch from the KV cache against the
uncached decode, the embeddings' scale) on each family's 2-layer model, and writes the family x feature table
in markdown to ``docs/bench/arch_matrix.md`` (``--out`` elsewhere), a cell per check: ``ok`` and its note, or
``FAIL`` and what differed. Exits 1 when a check fails. About 10 s on one thread.

    .venv/bin/python benchmarks/arch_matrix.py
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def table(threads: int = 1) -> tuple[list[str], bool]:
    """The markdown lines of the table, and whether every check passed."""
    import torch
    import transformers

    from benchmarks.report import commit, quiet_torch
    from tests.support import arch_matrix as matrix

    quiet_torch(threads)
    start = time.perf_counter()
    tok, tok_name = matrix.tokenizer()
    types = matrix.model_types()
    columns = [c for c, _ in matrix.CHECKS]
    rows, ok = [], True
    for family in matrix.FAMILIES:
        bundle = matrix.build(family, tok)
        cells = []
        for column in columns:
            try:
                cells.append(f"ok: {matrix.run_check(column, bundle, family)}")
            except Exception as err:  # a failing check is a cell of the table, not the end of the run
                ok = False
                cells.append(f"**FAIL** {type(err).__name__}: {str(err).splitlines()[0][:120]}".replace("|", "/"))
        rows.append(f"| {family} | `{types[family]}` | " + " | ".join(cells) + " |")
        print(rows[-1], flush=True)
    wall = time.perf_counter() - start
    lines = [
        "# Architecture matrix",
        "",
        "Every feature on a tiny random model (2 layers, hidden size 32, seed 0, built from its `transformers` config "
        f"class) of each family the model adapter (`asc/arch.py`) knows, on a 17-token snippet with {tok_name}. "
        "Written by `benchmarks/arch_matrix.py` from the checks of `tests/asc/test_arch_matrix.py` "
        "(`tests/support/arch_matrix.py`); a cell is `ok` with its note or `FAIL` with what differed.",
        "",
        "Columns: AsC-Eval scores equal a plain forward pass's log-probabilities (1e-5); the logit lens's last layer "
        "equals the output (1e-5, ranks equal); gradient x input's value is the target's log-probability; integrated "
        "gradients sum to f(x) - f(baseline) within 1% (`steps=\"auto\"`, points used); occlusion runs from the "
        "clean KV cache (variants run); patching the whole clean residual stream into a corrupted run restores the "
        "clean value at every layer (1e-5), by the cached method where the layers replay and by hooks; a branch "
        "continued from the KV cache equals the uncached greedy decode token for token (and a continuation of input "
        "embeddings from a cut cache the uncached logits, 1e-4); the embeddings' scale from a matrix row to layer "
        "0's input (Gemma's sqrt(hidden) = 5.66, Granite's embedding multiplier 2 here).",
        "",
        "What needed the adapter (issue 45, 1): the lens on OPT (its `project_out` after the final norm), on Cohere "
        "and Granite (their logit scales: the last layer was 0.11 and 0.17 nats off the output before), and the "
        "cached patching method beyond GPT-2, Llama and Gemma 3 (the other families ran hooked full passes).",
        "",
        f"transformers {transformers.__version__}, torch {torch.__version__}, python {platform.python_version()}, "
        f"{threads} torch thread(s); {wall:.1f} s; "
        f"{datetime.datetime.now().astimezone().date().isoformat()}, commit {commit()}.",
        "",
        "<!-- --8<-- [start:table] -->",  # docs/models.md includes this part (pymdownx.snippets)
        "| family | model_type | " + " | ".join(columns) + " |",
        "|" + "---|" * (len(columns) + 2),
        *rows,
        "<!-- --8<-- [end:table] -->",
    ]
    return lines, ok


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "bench" / "arch_matrix.md")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (default 1: tiny models gain nothing)")
    args = ap.parse_args()
    lines, ok = table(args.threads)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"\nwritten to {args.out}")
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
