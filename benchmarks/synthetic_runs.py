"""Synthetic corpus runs for `make bench`: a real small run copied with new snippet ids to any size.

``make_run(base, n, out)`` reads a real run folder (e.g. 40 HumanEval functions scored by the default model),
repeats its snippets with new ids (``<id>~<copy>``) until there are ``n``, and writes them through the run's
own writer (:func:`asc.corpus.runs.write_chunk`, so every file a real run writes is there, summaries
included) in parts of ``part_size`` snippets, with the base run's meta.json (``n_planned`` = ``n``,
finished). This is how issue 16's table was measured: 10,000 and 100,000 snippets (816,000 and 8.2 million
nodes). ``python benchmarks/synthetic_runs.py BASE N OUT`` makes one from the command line.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from asc.atomic import write_atomic
from asc.corpus.runs import TABLES, load_run, write_chunk


def make_run(base: str | Path, n: int, out: str | Path, part_size: int = 1000, tokens: bool = False) -> Path:
    """Write a run folder of ``n`` snippets copied from ``base`` (``tokens``: copy the tokens table too; it is
    by far the largest and no summary reads it; without it the tokens parts are empty, with their columns)."""
    import pandas as pd

    src = load_run(base)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=False)
    for table in TABLES:
        (out / table).mkdir()
    ids = src.snippets["id"].astype(str).tolist()
    copy_tables = TABLES if tokens else ("nodes", "concepts", "snippets")
    by_table = {t: getattr(src, t) for t in TABLES}
    index = {t: by_table[t].groupby("snippet_id" if t != "snippets" else "id").indices for t in copy_tables}
    key = {t: "id" if t == "snippets" else "snippet_id" for t in TABLES}
    # one template part of part_size snippets (ids <id>~<k>), then every part is the template with ids <id>~<k>@<p>
    template: dict[str, list] = {t: [] for t in TABLES}
    for k in range(min(part_size, n)):
        base_id = ids[k % len(ids)]
        for t in copy_tables:
            rows = index[t].get(base_id)
            if rows is not None:
                df = by_table[t].iloc[rows].copy()
                df[key[t]] = f"{base_id}~{k // len(ids)}"
                df["_k"] = k
                template[t].append(df)
    frames = {t: (pd.concat(template[t], ignore_index=True) if template[t] else by_table[t].iloc[:0].assign(_k=0))
              for t in TABLES}
    done = part = 0
    while done < n:
        size = min(part_size, n - done)
        tables = {}
        for t, df in frames.items():
            df = df[df["_k"] < size].drop(columns="_k")
            tables[t] = df.assign(**{key[t]: df[key[t]] + f"@{part}"}) if part else df
        write_chunk(out, part, tables)
        done += size
        part += 1
    meta = src.meta.as_dict() | {"n_planned": n, "finished": time.strftime("%Y-%m-%dT%H:%M:%S"),
                             "synthetic": {"base": str(base), "copies_of": len(ids)}}
    meta.pop("corpus", None)  # not resumable: the corpus was never planned
    write_atomic(out / "meta.json", lambda tmp: tmp.write_text(json.dumps(meta, indent=2)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("base")
    ap.add_argument("n", type=int)
    ap.add_argument("out")
    ap.add_argument("--part-size", type=int, default=1000)
    ap.add_argument("--tokens", action="store_true")
    args = ap.parse_args()
    t0 = time.perf_counter()
    make_run(args.base, args.n, args.out, args.part_size, args.tokens)
    print(f"{args.out}: {args.n} snippets in {time.perf_counter() - t0:.1f} s")


if __name__ == "__main__":
    main()
