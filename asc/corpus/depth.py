"""Per-layer AsC-Eval in corpus runs (``python -m asc eval ... --per-layer``): the ``layers/`` table and its summary.

A run made with ``--per-layer`` scores each snippet with the logit lens (:mod:`asc.lens`; the output layer gives the
four usual tables, unchanged) and writes a fifth table, a folder of Parquet parts numbered like the others and
written before the chunk's ``snippets`` part (so a finished chunk always has it):

``layers/``  one row per (snippet, layer, node with a value): ``snippet_id``, ``layer`` (int16; 0 = embeddings,
             L = output), ``node`` (int32, the node's ``id`` in ``nodes/``), ``value`` (float32). Long and compact:
             164 HumanEval functions x 31 SmolLM2 layers are about 1.4 million rows, 6 MB.

:func:`layer_summary` reads it back as the corpus picture: per category and layer the median of node values over
the whole corpus (the statistic of Table I, without the bootstrap), the number of nodes, the relative depth
``layer / L`` (to put models of different depth on one axis) and the first layer whose median reaches the
confidence line (:data:`asc.concepts.CONFIDENCE_LINE`).
The categories come from the ``nodes/`` table, so the summary follows the run's own category mapping.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.align import AlignOptions
from asc.atomic import write_atomic
from asc.concepts import CONFIDENCE_LINE, GLOBAL, CategoryMap, load_categories
from asc.corpus.tables import parquet_bytes
from asc.depth import layer_values
from asc.errors import CorpusError
from asc.explain import explain_scored

if TYPE_CHECKING:
    import pandas as pd

    from asc.corpus.sources import Snippet
    from asc.lens import LayerScores

__all__ = ["LAYERS_TABLE", "chunk_layers", "crossing_table", "has_layers", "layer_bytes", "layer_frame",
           "layer_summary", "write_layers"]

LAYERS_TABLE = "layers"


def layer_frame(snippet_id: str, values: np.ndarray) -> pd.DataFrame:
    """The ``layers/`` rows of one snippet from its node values per layer, ``(L + 1, N)`` (NaN rows dropped)."""
    import pandas as pd

    layer, node = np.nonzero(~np.isnan(values))
    return pd.DataFrame({"snippet_id": snippet_id, "layer": layer.astype(np.int16), "node": node.astype(np.int32),
                         "value": values[layer, node].astype(np.float32)})


def chunk_layers(info: dict, chunk: Sequence[Snippet], lenses: Sequence[LayerScores], *, aggregate: str,
                 options: AlignOptions, cmaps: dict[str, CategoryMap]) -> list[pd.DataFrame]:
    """The ``layers/`` rows of a chunk scored with the lens: each snippet aligned and aggregated at every layer
    exactly as its output (``info``: :meth:`ModelBundle.summary`; ``cmaps`` filled per language)."""
    frames = []
    for snip, lens in zip(chunk, lenses, strict=True):
        cmap = cmaps.setdefault(snip.language, load_categories(snip.language))
        explanation = explain_scored(info, lens.output, snip.language, aggregate, options, cmap)
        frames.append(layer_frame(snip.id, layer_values(explanation, lens, cmap)[0]))
    return frames


def layer_bytes(frames: Sequence[pd.DataFrame]) -> bytes:
    """One chunk's layer rows as the bytes of their Parquet part (to ship them from a Ray actor)."""
    import pandas as pd

    frame = pd.concat(list(frames), ignore_index=True) if frames else layer_frame("", np.zeros((0, 0)))
    return parquet_bytes(frame)


def write_layers(out: Path, part: int, rows: Sequence[pd.DataFrame] | bytes) -> None:
    """Write one chunk's layer rows (frames, or :func:`layer_bytes`) as ``layers/part-NNNNN.parquet``, atomically."""
    data = rows if isinstance(rows, bytes) else layer_bytes(rows)
    (out / LAYERS_TABLE).mkdir(exist_ok=True)
    write_atomic(out / LAYERS_TABLE / f"part-{part:05d}.parquet", lambda tmp: tmp.write_bytes(data))


def has_layers(path: str | Path) -> bool:
    """Whether the run folder was made with ``--per-layer`` (its settings say so)."""
    from asc.corpus.folder import read_run_meta

    try:
        return read_run_meta(Path(path)).settings.per_layer
    except CorpusError:
        return False


def layer_summary(path: str | Path, label: str | None = None) -> pd.DataFrame:
    """Per category (and :data:`~asc.concepts.GLOBAL`, every categorized node) and layer of a ``--per-layer`` run:
    ``model, category, layer, depth, value`` (median node value), ``n`` (nodes). Finished chunks only."""
    import pandas as pd

    from asc.corpus.folder import read_run_meta

    path = Path(path)
    meta = read_run_meta(path)
    if not meta.settings.per_layer:
        raise CorpusError(f"{path} was evaluated without --per-layer: run `python -m asc eval ... --per-layer` into a new "
                          "folder to see values per layer")
    done = sorted((path / "snippets").glob("part-*.parquet"))
    frames, nodes = [], []
    for part in done:
        layer_part, node_part = path / LAYERS_TABLE / part.name, path / "nodes" / part.name
        if not layer_part.is_file() or not node_part.is_file():
            raise CorpusError(f"{path}: {LAYERS_TABLE}/{part.name} or nodes/{part.name} is missing; delete the folder "
                              "and run the evaluation again")
        frames.append(pd.read_parquet(layer_part))
        nodes.append(pd.read_parquet(node_part, columns=["snippet_id", "id", "category"]))
    if not frames:
        raise CorpusError(f"{path} holds no finished snippet yet: run the evaluation again, or wait for it")
    layers = pd.concat(frames, ignore_index=True)
    cats = pd.concat(nodes, ignore_index=True).rename(columns={"id": "node"}).dropna(subset=["category"])
    joined = layers.merge(cats, on=["snippet_id", "node"], how="inner")
    per_cat = joined.groupby(["category", "layer"])["value"].agg(["median", "size"]).reset_index()
    overall = joined.groupby("layer")["value"].agg(["median", "size"]).reset_index().assign(category=GLOBAL)
    table = pd.concat([per_cat, overall], ignore_index=True).rename(columns={"median": "value", "size": "n"})
    last = max(1, int(layers["layer"].max()))
    table["depth"] = table["layer"] / last
    model = label or meta.model_name
    table.insert(0, "model", model)
    return table[["model", "category", "layer", "depth", "value", "n"]].sort_values(
        ["category", "layer"], kind="stable").reset_index(drop=True)


def crossing_table(summary: pd.DataFrame, threshold: float = CONFIDENCE_LINE) -> pd.DataFrame:
    """Per model and category, the first layer (and relative depth) whose median reaches ``threshold``, and the
    output layer's median: ``model, category, crossing, crossing_depth, output``; NaN where it never does."""
    import pandas as pd

    rows: list[dict[str, Any]] = []
    for (model, category), group in summary.groupby(["model", "category"], sort=False):
        group = group.sort_values("layer")
        hit = group[group["value"] >= threshold]
        first = hit.iloc[0] if len(hit) else None
        rows.append({"model": model, "category": category,
                     "crossing": float(first["layer"]) if first is not None else math.nan,
                     "crossing_depth": float(first["depth"]) if first is not None else math.nan,
                     "output": float(group["value"].iloc[-1])})
    return pd.DataFrame(rows, columns=["model", "category", "crossing", "crossing_depth", "output"])
