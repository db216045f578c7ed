"""Fork points in corpus runs (``python -m asc eval ... --forks``): what a run stores, and the fork table.

A fork point is a token where the model hesitates (:mod:`asc.branching.forks`: top-2 margin below ``max_margin`` or
entropy above ``min_entropy``). A run made with ``--forks`` records the two thresholds in its settings
(``"forks": {"max_margin", "min_entropy"}``; absent from runs made without, so those stay resumable, and a run
is resumed only with the same thresholds) and stores, per chunk:

``tokens/``  two more columns: ``margin`` (float64, p(first choice) - p(second choice), NaN without a
             prediction) and ``is_fork`` (bool). ``entropy`` was there already; ``margin`` is derivable from
             ``top_prob`` too, but stored so nobody has to read the list column to get it.
``nodes/``   two more columns: ``n_forks`` (int32, fork points among the tokens bound to the node, ancestors
             included as in AsC-Eval) and ``fork_rate`` (float64, :func:`asc.branching.forks.node_fork_rate`: their share
             of the node's tokens with a prediction; NaN where it has none).
``forks/``   a sixth table, numbered like the others and written before the chunk's ``snippets`` part: one row
             per (snippet, category present): ``snippet_id``, ``category`` (and :data:`~asc.concepts.GLOBAL`,
             always written, so every snippet has a row), ``n_tokens`` (distinct tokens with a prediction bound
             to any of the category's nodes; Global: to any categorized node) and ``n_forks`` (how many of them
             are fork points). ``n_forks / n_tokens`` is :func:`asc.branching.forks.category_fork_rate` of the snippet.

The fork rate of a category is the **share of its tokens that are fork points**, pooled over the corpus
(``sum n_forks / sum n_tokens``), not the share of its nodes holding a fork: a node with more tokens has more
chances to hold one (nearly every function body does), so a node share would rank categories by the size of
their nodes; a token share compares categories, and models with different tokenizers, the way AsC-Eval values
do, and equals the inspector's per-snippet rate. :func:`fork_table` gives it with a percentile interval from
the snippet bootstrap of Table I (:func:`asc.corpus.bootstrap.snippet_weights`: whole snippets resampled,
since the tokens of one snippet are not independent; with the same seed the very resamples of Table I).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.branching.forks import ForkSettings, fork_points, node_fork_rate
from asc.concepts import GLOBAL, load_categories
from asc.corpus.bootstrap import snippet_weights
from asc.corpus.folder import RunMeta, read_run_meta, run_language
from asc.errors import AscError, CorpusError, InputError
from asc.explain import Explanation

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FORKS_TABLE", "FORK_COLUMNS", "cli_settings", "fork_counts", "fork_report", "fork_settings",
           "fork_summary", "fork_table", "has_forks", "settings_entry", "with_forks"]

FORKS_TABLE = "forks"
FORK_COLUMNS = ["model", "corpus", "category", "rate", "ci_low", "ci_high", "boot_std", "n_forks", "n_tokens",
                "n_snippets"]


def settings_entry(settings: ForkSettings) -> dict[str, float]:
    """What a run's settings record under ``"forks"``."""
    return {k: float(v) for k, v in asdict(settings).items()}


def cli_settings(forks: bool, max_margin: float | None, min_entropy: float | None) -> ForkSettings | None:
    """The thresholds of ``--forks`` (``--fork-margin``/``--fork-entropy``, else :class:`ForkSettings`' defaults),
    None without ``--forks``; a threshold given without it is an InputError naming the fix."""
    if not forks:
        if max_margin is not None or min_entropy is not None:
            raise InputError("--fork-margin and --fork-entropy set the thresholds of --forks: add --forks")
        return None
    default = ForkSettings()
    return ForkSettings(default.max_margin if max_margin is None else max_margin,
                        default.min_entropy if min_entropy is None else min_entropy)


def fork_settings(meta: RunMeta) -> ForkSettings | None:
    """The thresholds a run was made with (its meta.json), or None for a run made without ``--forks``."""
    entry = meta.settings.forks
    if entry is None:
        return None
    try:
        return ForkSettings(**entry)
    except (TypeError, AscError):
        raise CorpusError(f"meta.json records broken fork thresholds ({entry!r}); delete the folder and run the "
                          "evaluation again") from None


def has_forks(path: str | Path) -> bool:
    """Whether the run folder was made with ``--forks`` (its settings say so)."""
    try:
        return fork_settings(read_run_meta(Path(path))) is not None
    except CorpusError:
        return False


def fork_counts(explanation: Explanation, is_fork: np.ndarray, has: np.ndarray) -> dict[str, tuple[int, int]]:
    """Per category present and Global: (distinct tokens with a prediction bound to its nodes, fork points
    among them). ``is_fork``/``has``: bool (T,) per token (fork point; has a prediction)."""
    al = explanation.alignment
    names = sorted({c for c in explanation.node_category if c})
    node_cat = np.array(explanation.node_category, dtype=object)
    n = explanation.scores.n_tokens
    overall = al.covered_tokens(np.array([c is not None for c in node_cat], dtype=bool), n) & has
    out = {GLOBAL: (int(overall.sum()), int(is_fork[overall].sum()))}
    for c in names:  # a token inside nested nodes of one category counts once
        toks = al.covered_tokens(node_cat == c, n) & has
        if toks.any():
            out[c] = (int(toks.sum()), int(is_fork[toks].sum()))
    return out


def with_forks(tables: dict[str, pd.DataFrame], explanation: Explanation,
               settings: ForkSettings) -> dict[str, pd.DataFrame]:
    """One snippet's tables (``tokens``, ``nodes``, ... of :mod:`asc.corpus.runs`) with the fork columns added
    and its ``forks`` rows (module doc), computed from ``explanation``'s scores with ``settings``."""
    import pandas as pd

    forks = fork_points(explanation.scores, settings)
    has = ~np.isnan(forks.margin)
    al = explanation.alignment
    n_forks = al.segment_sum(forks.is_fork).round().astype(np.int32)
    snippet_id = tables["snippets"]["id"].iloc[0]
    counts = fork_counts(explanation, forks.is_fork, has)
    rows = pd.DataFrame([(snippet_id, c, n, f) for c, (n, f) in counts.items()],
                        columns=["snippet_id", "category", "n_tokens", "n_forks"]).astype(
                            {"n_tokens": np.int32, "n_forks": np.int32})
    return tables | {"tokens": tables["tokens"].assign(margin=forks.margin, is_fork=forks.is_fork),
                     "nodes": tables["nodes"].assign(n_forks=n_forks, fork_rate=node_fork_rate(explanation, forks)),
                     FORKS_TABLE: rows}


def _read(path: Path) -> tuple[RunMeta, pd.DataFrame]:
    """meta.json and the ``forks/`` rows of the finished chunks, or CorpusError naming the fix."""
    import pandas as pd
    import pyarrow as pa

    meta = read_run_meta(path)
    if fork_settings(meta) is None:
        raise CorpusError(f"{path} was evaluated without --forks: run `python -m asc eval ... --forks` into a new "
                          "folder to count fork points")
    frames = []
    for part in sorted((path / "snippets").glob("part-*.parquet")):
        try:
            frames.append(pd.read_parquet(path / FORKS_TABLE / part.name))
        except (OSError, ValueError, pa.ArrowException):
            raise CorpusError(f"{path}: {FORKS_TABLE}/{part.name} is missing or unreadable; delete the folder and "
                              "run the evaluation again") from None
    if not frames:
        raise CorpusError(f"{path} holds no finished snippet yet: run the evaluation again, or wait for it")
    return meta, pd.concat(frames, ignore_index=True)


def fork_table(run: Any, categories: Sequence[str] | None = None, n_boot: int = 500, seed: int = 0,
               ci: float = 0.95, label: str | None = None) -> pd.DataFrame:
    """Per category (Global first, then ``categories``, default: the run's language's) of one ``--forks`` run
    (a folder, or anything with its ``path``, e.g. a digest): the pooled fork rate, its snippet-bootstrap
    interval and counts (:data:`FORK_COLUMNS`; an absent category: NaN and 0). Finished chunks only."""
    import pandas as pd

    path = Path(getattr(run, "path", run))
    meta, rows = _read(path)
    snippets = pd.Index(rows["snippet_id"].astype(str).unique())
    if categories is None:
        categories = load_categories(run_language(path)).categories
    names = [GLOBAL, *categories]
    rows = rows[rows["category"].isin(names)]
    s, g = snippets.get_indexer(rows["snippet_id"].astype(str)), pd.Index(names).get_indexer(rows["category"])
    shape = (len(snippets), len(names))
    total, hits = np.zeros(shape), np.zeros(shape)
    np.add.at(total, (s, g), rows["n_tokens"].to_numpy(np.float64))
    np.add.at(hits, (s, g), rows["n_forks"].to_numpy(np.float64))
    draws = []
    for weights in snippet_weights(len(snippets), n_boot, seed):
        with np.errstate(invalid="ignore", divide="ignore"):
            draws.append((weights.T @ hits) / (weights.T @ total))
    boot = np.vstack(draws)
    alpha = (1 - ci) / 2
    sums, forks = total.sum(axis=0), hits.sum(axis=0)
    out = []
    for k, name in enumerate(names):
        col = boot[:, k][~np.isnan(boot[:, k])]
        lo, hi = (np.quantile(col, [alpha, 1 - alpha]) if len(col) else (math.nan, math.nan))
        out.append({"category": name, "rate": forks[k] / sums[k] if sums[k] else math.nan, "ci_low": float(lo),
                    "ci_high": float(hi), "boot_std": float(col.std()) if len(col) else math.nan,
                    "n_forks": int(forks[k]), "n_tokens": int(sums[k]), "n_snippets": int((total[:, k] > 0).sum())})
    table = pd.DataFrame(out)
    table.insert(0, "corpus", meta.settings.corpus)
    table.insert(0, "model", label or meta.model_name)
    return table[FORK_COLUMNS]


def fork_summary(runs: Sequence[Any], labels: Sequence[str], categories: Sequence[str] | None = None,
                 n_boot: int = 500, seed: int = 0) -> pd.DataFrame:
    """:func:`fork_table` of each ``--forks`` run among ``runs`` (labelled ``labels``), stacked; runs without
    fork data are left out (an empty table with :data:`FORK_COLUMNS` when none has them)."""
    import pandas as pd

    frames = [fork_table(run, categories, n_boot, seed, label=label) for run, label in zip(runs, labels, strict=True)
              if has_forks(getattr(run, "path", run))]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=FORK_COLUMNS)


def fork_report(table: pd.DataFrame, settings: ForkSettings | None, n_boot: int, seed: int) -> str:
    """A fork table (one or several models) as printed text: a header saying what a fork point is, then a row per
    category with ``rate [low, high]`` per model (``-``: no token of that category)."""
    models = list(dict.fromkeys(table["model"]))
    width = max([22, *(len(str(m)) for m in models)])
    rule = (f"top-2 margin below {settings.max_margin:g} or entropy above {settings.min_entropy:g} nats"
            if settings else "each run's thresholds")
    lines = [f"\nfork points ({rule}): the share of each category's tokens where the model hesitates ({n_boot} "
             f"snippet-level resamples, seed {seed}, 95% interval)\n",
             (f"  {'category':<24} " + "  ".join(f"{str(m):<{width}}" for m in models)).rstrip()]
    for category, group in table.groupby("category", sort=False):
        by_model = group.drop_duplicates("model").set_index("model")
        cells = []
        for m in models:
            r = by_model.loc[m] if m in by_model.index else {"rate": math.nan}
            text = f"{r['rate']:.3f} [{r['ci_low']:.3f}, {r['ci_high']:.3f}]" if r["rate"] == r["rate"] else "-"
            cells.append(f"{text:<{width}}")
        lines.append(f"  {str(category):<24} " + "  ".join(cells).rstrip())
    return "\n".join(lines)
