"""Aggregation (the paper's theta), syntax categories, and corpus-level bootstrapped medians.

Three levels, each documented where it is computed:

* **node**: theta over the probabilities of the tokens bound to the node (median by default, as the
  paper's text and Fig. 2-C; mean and max on request). Tokens with no prediction are left out; a
  node with no predicted token has no value (NaN), never 0. (The authors' code took the median of
  unseeded bootstrap means per node; we follow the paper's definition, which is deterministic.)
* **snippet**: per node type and per category, theta over the values of the snippet's nodes of that
  type/category, so every node weighs the same as in the corpus-level figures. An absent concept is
  missing (NaN / null), not 0 (the ASTxplainer authors' code coded it 0, which biases the averages).
* **corpus**: per category (and the global value over every categorized node), the median of node
  values with a seeded percentile bootstrap (500 resamples, 95% interval by default).

Category mappings are data files in ``assets/categories/<language>.json`` that users may edit.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType

import numpy as np

from asc.errors import InputError
from asc.paths import CATEGORIES_DIR
from asc.resampling import percentile_bootstrap

__all__ = ["AGGREGATES", "CONFIDENCE_LINE", "DEFAULT_LANGUAGE", "CategoryMap", "language_of", "load_categories", "aggregate_ranges", "aggregate_segments",
           "bootstrap_median", "category_label", "check_aggregate", "GLOBAL", "UNCATEGORIZED"]

AGGREGATES = ("median", "mean", "max")
GLOBAL = "Global"
#: the category of a node whose type no category of the mapping lists: a label (tables, exports, hover texts), not a
#: missing value; the data keep ``None`` (``Explanation.node_category``, runs' Parquet tables) and summaries skip it
UNCATEGORIZED = "uncategorized"
DEFAULT_LANGUAGE = "python"  # a run without snippets, a snippet without a language
#: the paper's "acceptable confidence" line: a value at or above it is confident; the colour scales are centred
#: on it, the CLI marks categories against it, and a layer "crosses" where a category first reaches it
CONFIDENCE_LINE = 0.6


def category_label(category: object) -> str:
    """A node's category as tables and exports show it: ``category``, or :data:`UNCATEGORIZED` for ``None`` (NaN in a
    pandas column)."""
    return category if isinstance(category, str) else UNCATEGORIZED


@dataclass(frozen=True)
class CategoryMap:
    """node type -> category for one language, plus the concepts used by the causal analysis.

    Read-only: one loaded mapping is shared by every caller (and every app session), so
    ``type_to_category`` is a read-only view (mutating it raises ``TypeError``).
    """

    language: str
    categories: tuple[str, ...]  # in file order
    type_to_category: Mapping[str, str]
    causal_concepts: tuple[str, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "type_to_category", MappingProxyType(dict(self.type_to_category)))

    def __reduce__(self) -> tuple:  # a mapping proxy does not pickle: rebuild from a plain copy
        return (CategoryMap, (self.language, self.categories, dict(self.type_to_category), self.causal_concepts))

    def category_of(self, node_type: str) -> str | None:
        return self.type_to_category.get(node_type)

    def types_of(self, category: str) -> tuple[str, ...]:
        return tuple(t for t, c in self.type_to_category.items() if c == category)


def language_of(languages: Iterable[object]) -> str:
    """The one answer to "which language is this run in?" (whose category mapping summarizes it), from its
    snippets' ``language`` values, or those of several runs shown together: the first in sorted order (a run mixes
    languages only when its corpus does, e.g. a .jsonl file), :data:`DEFAULT_LANGUAGE` when there is none.
    ``RunData.language`` and ``RunDigest.language`` call it."""
    found = sorted({str(lang) for lang in languages if isinstance(lang, str) and lang})
    return found[0] if found else DEFAULT_LANGUAGE


def load_categories(language: str = "python", path: str | Path | None = None) -> CategoryMap:
    """Read a category mapping; ``path`` overrides the shipped ``assets/categories/<language>.json``."""
    return _load(language, str(path) if path else str(CATEGORIES_DIR / f"{language}.json"))


@lru_cache(maxsize=16)
def _load(language: str, path: str) -> CategoryMap:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        shipped = ", ".join(sorted(p.stem for p in CATEGORIES_DIR.glob("*.json")))
        raise InputError(f"no category mapping at {path}; shipped mappings: {shipped}") from None
    except json.JSONDecodeError as err:
        raise InputError(f"category mapping {path} is not valid JSON: {err}") from None
    except RecursionError:
        raise InputError(f"category mapping {path} is nested too deeply: see assets/categories/python.json") from None
    except UnicodeDecodeError as err:
        raise InputError(f"category mapping {path} is not valid UTF-8 (byte {err.start}: {err.reason}); re-save it "
                         "as UTF-8 JSON (see assets/categories/python.json)") from None
    except OSError as err:  # a folder, no permission
        raise InputError(f"cannot read the category mapping {path}: {err.strerror or err}; give a readable JSON "
                         "file (see assets/categories/python.json)") from None
    cats = data.get("categories") if isinstance(data, dict) else None
    if not isinstance(cats, dict) or not all(
            isinstance(v, list) and all(isinstance(t, str) for t in v) for v in cats.values()):
        raise InputError(f"category mapping {path}: needs an object whose 'categories' maps each category name "
                         "to a list of node type names (strings); see assets/categories/python.json")
    causal = data.get("causal_concepts", [])
    if not isinstance(causal, list) or not all(isinstance(t, str) for t in causal):
        raise InputError(f"category mapping {path}: 'causal_concepts' must be a list of node type names")
    mapping: dict[str, str] = {}
    for cat, types in cats.items():
        for t in types:
            if t in mapping:
                raise InputError(f"category mapping {path}: node type {t!r} is in both {mapping[t]!r} and {cat!r}")
            mapping[t] = cat
    return CategoryMap(language=data.get("language", language), categories=tuple(cats), type_to_category=mapping,
                       causal_concepts=tuple(causal))


def check_aggregate(name: str) -> str:
    if name not in AGGREGATES:
        raise InputError(f"unknown aggregation {name!r}; choose one of: {', '.join(AGGREGATES)}")
    return name


def aggregate_segments(values: np.ndarray, segment: np.ndarray, n_segments: int, how: str = "median") -> np.ndarray:
    """theta per segment: ``values[k]`` belongs to segment ``segment[k]``. NaN values are ignored;
    segments with no value get NaN. Vectorized (one sort), so thousands of nodes cost microseconds."""
    check_aggregate(how)
    values = np.asarray(values, dtype=np.float64)
    segment = np.asarray(segment, dtype=np.int64)
    ok = ~np.isnan(values)
    v, s = values[ok], segment[ok]
    out = np.full(n_segments, np.nan)
    if not len(v):
        return out
    counts = np.bincount(s, minlength=n_segments)
    has = counts > 0
    if how == "mean":
        out[has] = np.bincount(s, weights=v, minlength=n_segments)[has] / counts[has]
        return out
    order = np.lexsort((v, s))
    v = v[order]
    first = np.concatenate([[0], np.cumsum(counts)[:-1]])
    if how == "max":
        out[has] = v[first[has] + counts[has] - 1]
        return out
    lo = first + (counts - 1) // 2
    hi = first + counts // 2
    out[has] = (v[lo[has]] + v[hi[has]]) / 2
    return out


def _kth_smallest(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The ``k[q]``-th smallest (0-based) of ``values[lo[q]:hi[q]]`` for every query ``q`` at once
    (``0 <= k < hi - lo``), with a wavelet matrix over the values' ranks: one pass of vectorized numpy per bit
    of the rank, O((values + queries) log values) time and O(values + queries) memory however the ranges nest."""
    by_value = np.argsort(values, kind="stable")
    rank = np.empty(len(values), dtype=np.int64)
    rank[by_value] = np.arange(len(values))
    lo, hi, k = lo.astype(np.int64), hi.astype(np.int64), k.astype(np.int64)
    found = np.zeros(len(lo), dtype=np.int64)
    cur = rank
    for bit in reversed(range(max(1, int(len(values) - 1).bit_length()))):
        one = ((cur >> bit) & 1).astype(bool)
        zeros_before = np.concatenate([[0], np.cumsum(~one)])  # zeros among cur[:j]
        n_zero = zeros_before[-1]
        zl, zh = zeros_before[lo], zeros_before[hi]
        right = k >= zh - zl  # fewer than k + 1 zeros in the range: the answer has this bit set
        k = np.where(right, k - (zh - zl), k)
        lo, hi = np.where(right, n_zero + lo - zl, zl), np.where(right, n_zero + hi - zh, zh)
        found |= right.astype(np.int64) << bit
        cur = np.concatenate([cur[~one], cur[one]])  # stable: zeros first, each side in its order
    return values[by_value][found]


def _range_sums(values: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """``values[lo[i]:hi[i]].sum()`` for every non-empty range, each summed on its own (``np.add.reduceat`` over
    the ranges sorted by start, so the stretches between consecutive ranges, also summed and dropped, are disjoint:
    O(total range length + values + ranges log ranges))."""
    by_start = np.argsort(lo, kind="stable")
    bounds = np.empty(2 * len(lo), dtype=np.int64)
    bounds[0::2], bounds[1::2] = lo[by_start], hi[by_start]
    sums = np.empty(len(lo))
    sums[by_start] = np.add.reduceat(np.append(values, 0.0), bounds)[0::2]  # the 0.0: a bound may be len(values)
    return sums


def aggregate_ranges(values: np.ndarray, lo: np.ndarray, hi: np.ndarray, how: str = "median") -> np.ndarray:
    """theta per range: range ``i`` holds ``values[lo[i]:hi[i]]`` (ranges may overlap or nest). NaN values are
    ignored; ranges with no value get NaN. Equal to :func:`aggregate_segments` over the ranges' elements, without
    repeating an element once per range that holds it: the median and max are order statistics of
    :func:`_kth_smallest`, O((values + ranges) log values) however the ranges nest.

    The mean is each range's own sum (:func:`_range_sums`), added left to right as :func:`aggregate_segments`
    adds: any float64 value is taken, ``inf`` included (a range holding ``inf`` has mean ``inf``, one holding
    both infinities NaN, every other range is unaffected) and a small range beside huge values keeps its
    precision (a difference of prefix sums over the whole array lost both). It costs the ranges' total length:
    at most values x (depth + 1) for the nested ranges of a syntax tree, which :data:`asc.syntax.MAX_AST_DEPTH`
    bounds."""
    check_aggregate(how)
    values = np.asarray(values, dtype=np.float64)
    ok = ~np.isnan(values)
    before = np.concatenate([[0], np.cumsum(ok)])  # valid values before each position
    lo, hi = before[np.asarray(lo, dtype=np.int64)], before[np.asarray(hi, dtype=np.int64)]
    v = values[ok]
    counts = hi - lo
    out = np.full(len(lo), np.nan)
    has = counts > 0
    if not has.any():
        return out
    if how == "mean":
        out[has] = _range_sums(v, lo[has], hi[has]) / counts[has]
        return out
    lo, hi, counts = lo[has], hi[has], counts[has]
    if how == "max":
        out[has] = _kth_smallest(v, lo, hi, counts - 1)
        return out
    out[has] = (_kth_smallest(v, lo, hi, (counts - 1) // 2) + _kth_smallest(v, lo, hi, counts // 2)) / 2
    return out


def bootstrap_median(values: np.ndarray, n_boot: int = 500, seed: int = 0, ci: float = 0.95,
                     max_chunk: int = 2_000_000) -> tuple[float, float, float, float]:
    """Seeded percentile bootstrap of the median: ``(median of bootstrap medians, lo, hi, std)``.

    NaN values are dropped first; an empty input gives NaNs. Resamples are drawn in chunks so memory
    stays bounded on large corpora.
    """
    v = np.asarray(values, dtype=np.float64)
    v = v[~np.isnan(v)]
    if not len(v):
        return (np.nan, np.nan, np.nan, np.nan)
    boot = percentile_bootstrap(lambda x: np.median(x, axis=1), [v], n_boot=n_boot, seed=seed, level=ci,
                                batched=True, max_chunk=max_chunk)
    meds, lo, hi = boot.draws, boot.low, boot.high
    return float(np.median(meds)), float(lo), float(hi), float(meds.std())
