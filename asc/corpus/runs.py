"""Corpus evaluation runs: AsC-Eval over many snippets, written to Parquet, resumable.

A run folder holds ``meta.json`` (model, corpus, settings) and four tables, each a folder of
Parquet parts that ``pandas.read_parquet(folder)`` reads whole:

``snippets/``  one row per snippet: id, origin, name, language, n_tokens, n_nodes, ast_levels,
               has_error, loss (mean cross-entropy, nats/token), n_windows, source
``tokens/``    one row per token: snippet_id, index, text, start, end, special, prob, logprob,
               entropy, rank, top_text (list), top_prob (list)
``nodes/``     one row per AST node: snippet_id, id, type, named, start, end, parent, depth,
               category, is_error, is_missing, n_tokens, value
``concepts/``  snippet-level values in long form: snippet_id, kind ("type" | "category" | "global"),
               name, value, n_nodes. Absent concepts have no row (missing, not 0).

Snippets are processed in chunks (one batched scoring call each); each chunk is written as part
``NNNNN`` of every table, the ``snippets`` part last and every file atomically, so an interrupted run
leaves only whole chunks. Running again with the same folder skips the snippets already done; a
folder made with another model or other settings is refused.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from asc.align import AlignOptions
from asc.atomic import write_atomic
from asc.concepts import GLOBAL, CategoryMap, aggregate_segments, load_categories
from asc.corpus.sources import Snippet
from asc.errors import CorpusError
from asc.explain import Explanation, explain_scored
from asc.models import ModelBundle
from asc.scores import score_texts

__all__ = ["TABLES", "RunData", "load_run", "read_meta", "run_corpus", "run_folders", "run_title"]

log = logging.getLogger(__name__)
TABLES = ("tokens", "nodes", "concepts", "snippets")  # write order: snippets last marks a chunk done
FORMAT_VERSION = 1


@dataclass(frozen=True)
class RunData:
    """A run folder read back: ``meta`` dict and one pandas DataFrame per table."""

    path: Path
    meta: dict
    snippets: Any  # pandas DataFrames (pandas is imported lazily)
    tokens: Any
    nodes: Any
    concepts: Any


def _frames(snip: Snippet, ex: Explanation, cmap: CategoryMap, aggregate: str) -> dict:
    import pandas as pd

    s, t = ex.scores, ex.tree
    tok = ex.token_frame().drop(columns=["top"])
    tok.insert(0, "snippet_id", snip.id)
    tok["top_text"] = [list(x) for x in s.top_text]
    tok["top_prob"] = [[float(p) for p in row if not math.isnan(p)] for row in s.top_probs]
    nodes = ex.node_frame()
    nodes.insert(0, "snippet_id", snip.id)
    counts = nodes.groupby("type").size()
    rows = [(snip.id, "type", k, v, int(counts[k])) for k, v in ex.concept_values.items()]
    cat_counts = nodes.dropna(subset=["value"]).groupby("category").size()
    rows += [(snip.id, "category", k, v, int(cat_counts.get(k, 0))) for k, v in ex.category_values.items()
             if not math.isnan(v)]
    categorized = np.array([c is not None for c in ex.node_category])
    glob = aggregate_segments(ex.values[categorized], np.zeros(int(categorized.sum()), dtype=np.int64), 1, aggregate)[0]
    if not math.isnan(glob):
        rows.append((snip.id, "global", GLOBAL, float(glob), int((categorized & ~np.isnan(ex.values)).sum())))
    concepts = pd.DataFrame(rows, columns=["snippet_id", "kind", "name", "value", "n_nodes"])
    snippets = pd.DataFrame([{
        "id": snip.id, "origin": snip.origin, "name": snip.name, "language": snip.language, "line": snip.line,
        "n_tokens": s.n_tokens, "n_nodes": t.n_nodes, "ast_levels": t.n_levels, "has_error": t.has_error,
        "loss": s.loss, "n_windows": s.n_windows, "source": snip.source,
    }])
    return {"tokens": tok, "nodes": nodes, "concepts": concepts, "snippets": snippets}


def _write_atomic(df, path: Path) -> None:
    write_atomic(path, lambda tmp: df.to_parquet(tmp, index=False))


def _settings(bundle: ModelBundle, corpus: str, aggregate: str, options: AlignOptions, max_window: int | None) -> dict:
    return {"format": FORMAT_VERSION, "model": bundle.describe(), "corpus": corpus, "aggregate": aggregate,
            "align": asdict(options), "max_window": max_window}


def _done_ids(out: Path) -> tuple[set[str], int]:
    """Snippet ids of complete chunks, and the next part number. Orphan parts of a cut chunk are removed."""
    import pandas as pd

    done_parts = {p.stem for p in (out / "snippets").glob("part-*.parquet")}
    for table in TABLES[:-1]:
        for p in (out / table).glob("part-*.parquet"):
            if p.stem not in done_parts:
                p.unlink()
    ids: set[str] = set()
    for p in (out / "snippets").glob("part-*.parquet"):
        ids.update(pd.read_parquet(p, columns=["id"])["id"].tolist())
    numbers = [int(s.split("-")[1]) for s in done_parts]
    return ids, (max(numbers) + 1 if numbers else 0)


def run_corpus(bundle: ModelBundle, snippets: Sequence[Snippet], out: str | Path, *, corpus: str = "",
               aggregate: str = "median", options: AlignOptions | None = None, batch_size: int = 8,
               max_window: int | None = None, progress: bool | None = None,
               on_progress: Callable[[int, int], None] | None = None,
               should_stop: Callable[[], bool] | None = None) -> Path:
    """Evaluate ``snippets`` and write/extend the run folder ``out``. Returns the folder.

    ``progress`` shows a tqdm bar (default: when stderr is a terminal); ``on_progress(done, total)`` is
    called after every chunk (for UIs); ``should_stop()`` is asked before every chunk and ends the
    run early when it returns True (finished chunks stay on disk: running again resumes).
    """
    options = options or AlignOptions()
    out = Path(out)
    settings = _settings(bundle, corpus, aggregate, options, max_window)
    meta_path = out / "meta.json"
    if meta_path.exists():
        old = json.loads(meta_path.read_text())
        mismatch = [k for k in ("format", "model", "aggregate", "align", "max_window") if old.get("settings", {}).get(k) != settings[k]]
        if mismatch:
            raise CorpusError(f"{out} holds a run with other settings ({', '.join(mismatch)}); "
                              "use a new --out folder or delete this one")
    for table in TABLES:
        (out / table).mkdir(parents=True, exist_ok=True)
    done, part = _done_ids(out)
    meta = {"settings": settings, "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "n_planned": len(snippets)}
    if meta_path.exists():
        meta = {**json.loads(meta_path.read_text()), "n_planned": len(snippets)}
    write_atomic(meta_path, lambda tmp: tmp.write_text(json.dumps(meta, indent=2)))

    todo = [s for s in snippets if s.id not in done]
    if len(done):
        log.info("resuming %s: %d snippets already done, %d to go", out, len(snippets) - len(todo), len(todo))
    cmaps: dict[str, CategoryMap] = {}
    info = bundle.summary()
    bar = None
    if progress or (progress is None and os.isatty(2)):
        from tqdm import tqdm

        bar = tqdm(total=len(snippets), initial=len(snippets) - len(todo), unit="snippet", desc=bundle.name)
    total_done = len(snippets) - len(todo)
    try:
        for lo in range(0, len(todo), batch_size):
            if should_stop is not None and should_stop():
                log.info("stopped on request after %d of %d snippets", total_done, len(snippets))
                return out
            chunk = todo[lo : lo + batch_size]
            scored = score_texts(bundle, [s.source for s in chunk], max_window=max_window)
            frames: dict[str, list] = {t: [] for t in TABLES}
            for snip, sc in zip(chunk, scored, strict=False):
                cmap = cmaps.setdefault(snip.language, load_categories(snip.language))
                ex = explain_scored(info, sc, snip.language, aggregate, options, cmap)
                for table, df in _frames(snip, ex, cmap, aggregate).items():
                    frames[table].append(df)
            import pandas as pd

            for table in TABLES:
                _write_atomic(pd.concat(frames[table], ignore_index=True), out / table / f"part-{part:05d}.parquet")
            part += 1
            total_done += len(chunk)
            if bar is not None:
                bar.update(len(chunk))
            if on_progress is not None:
                on_progress(total_done, len(snippets))
    finally:
        if bar is not None:
            bar.close()
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    write_atomic(meta_path, lambda tmp: tmp.write_text(json.dumps(meta, indent=2)))
    return out


def load_run(path: str | Path, tables: tuple[str, ...] = TABLES) -> RunData:
    """Read a run folder written by :func:`run_corpus` (``tables`` left out come back empty, e.g. tokens)."""
    import pandas as pd

    path = Path(path)
    meta = read_meta(path)
    frames = {}
    for table in TABLES:
        parts = sorted((path / table).glob("part-*.parquet")) if table in tables else []
        frames[table] = pd.concat([pd.read_parquet(p) for p in parts], ignore_index=True) if parts else pd.DataFrame()
    return RunData(path=path, meta=meta, **frames)


def run_folders(root: str | Path, *required: str) -> list[Path]:
    """Folders under ``root`` holding a meta.json (and every file named in ``required``), newest first.

    The one listing of run folders: corpus runs, and (with ``"heads.npz"``) attention runs."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if (p / "meta.json").exists() and all((p / f).exists() for f in required)]
    return sorted(found, key=lambda p: (p / "meta.json").stat().st_mtime, reverse=True)


def read_meta(path: str | Path) -> dict:
    """A run folder's meta.json, or CorpusError naming the folder when it is missing or not JSON."""
    meta_path = Path(path) / "meta.json"
    try:
        meta = json.loads(meta_path.read_text())
    except FileNotFoundError:
        raise CorpusError(f"{path} is not a run folder (no meta.json); create one with `python -m asc eval`") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise CorpusError(f"{meta_path} cannot be read ({err}); delete the folder or run the evaluation again") from None
    if not isinstance(meta, dict):
        raise CorpusError(f"{meta_path} is not a JSON object; delete the folder or run the evaluation again")
    return meta


def run_title(path: str | Path) -> str:
    """``model · corpus · N snippets · folder`` for a run folder (from its meta.json)."""
    meta = read_meta(path)
    settings = meta.get("settings", {})
    done = "" if meta.get("finished") else " (incomplete)"
    return (f"{settings.get('model', {}).get('name', '?')} · {settings.get('corpus', '?')} · "
            f"{meta.get('n_planned', '?')} snippets{done} · {Path(path).name}")
