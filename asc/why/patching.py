"""Activation patching on the syntax tree: where and when does the model read what a corruption changed?

:func:`patch` runs the clean snippet and its corruption (:class:`asc.why.corrupt.Corruption`) once each, then,
for every layer ``l`` and every AST node span ``s``, restores the clean residual stream (the input of decoder
layer ``l``, :mod:`asc.why.residual`) at the span's positions inside the corrupted run and reads the target
token's log-probability. ``restored[l, s] = (patched - corrupted) / (clean - corrupted)``: 1 when the span's
clean state at that layer brings the whole clean value back, 0 when it brings nothing; NaN with a reason in
``note`` when clean == corrupted (the corruption does not move the target: nothing to restore). ``effect`` keeps
``patched - corrupted`` in nats, defined everywhere.

Spans (``spans=``): ``"changed"`` (default): the smallest named node around each edit; ``"after"``: those plus
every named leaf from the first edit to the target (where the changed information travels to); or node ids of
the clean tree. A span's positions are its tokens by AsC-Eval's alignment (:func:`asc.align.align`). Category
totals are measured, not summed: ``category_restored[c][l]`` patches all the spans of category ``c`` together,
``all_restored[l]`` every span together (the issue's sweep: every layer over the corruption's spans).

Aligned positions: a clean token and a corrupted token are aligned when they have the same id and the same span
once the edits' length changes are accounted for (outside the edits), or, between two such anchors, when the
two runs have as many tokens there (the edited tokens, paired in order). Only aligned positions are patched;
a corruption that changes the token count leaves the edited tokens unaligned, which ``unaligned_clean``,
``unaligned_corrupted`` and ``note`` say; a span with no aligned token is NaN (``skipped`` says why).
Positions before the first token where the runs differ are skipped as no-ops (both runs are equal there).

Cost: two full passes, then one batched run per layer whose rows start at that layer from the stored activations
(the ``"cached"`` method), so a sweep costs ``2 + rows x (L + 1) / 2`` layer passes of the snippet (``cost``
counts them in full-pass units; the output layer runs on one position only). With one span (its category and all
spans together are the same row, run once) that is the issue's sweep, every layer over a corruption's spans:
``L / 2 + 2.5`` layer passes; by the arithmetic under ``L / 2 + 2`` full passes where the output layer is a sizeable
part of a pass (SmolLM2: about a fifth); not on the 2-layer tiny model, whose time is Python overhead (measured
5.3 passes against 3).

Hooks or nnsight: both are measured by ``benchmarks/bench_patching.py`` (``docs/bench/patching.txt``: one sweep,
3 rows x 30 layers of SmolLM2, by the cached runs, by hooked full passes and by nnsight's full passes). The numbers
agree to float rounding; the cached runs take the least time, and hooked full passes and nnsight about the same.
Chosen: PyTorch hooks, in the cached form (the layers' arguments are recorded by forward pre-hooks and the layers
called from ``l`` on). nnsight is not used: its traces run the whole model, so a run cannot start at layer ``l``,
and importing it mounts ``.save`` on every Python object, a global side effect in a library.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from asc.align import align
from asc.concepts import load_categories
from asc.errors import InputError
from asc.models import ModelBundle
from asc.scores import encode, score_ids
from asc.syntax import SyntaxTree, parse
from asc.why.corrupt import Corruption
from asc.why.residual import ResidualRuns, record
from asc.why.targets import token_at

__all__ = ["Patching", "align_tokens", "default_target", "patch", "span_nodes", "target_values"]

_BUDGET_TOKENS = 16_384  # rows x tokens of one batched run


@dataclass(frozen=True)
class Patching:
    """Activation patching of one corruption (module doc). L layers, S spans, T / T' clean / corrupted tokens.

    ``restored`` and ``effect`` (L, S) float64; ``layers`` (L,) the layer numbers (input of decoder layer ``l``,
    0 = embeddings); ``node_ids`` (S,) clean-tree node ids, with ``node_types``, ``node_texts``,
    ``node_categories``; ``n_positions`` (S,) aligned positions patched per span; ``all_restored`` (L,) every
    span at once; ``category_restored`` {category: (L,)}. ``aligned`` (T',) int64: the clean token of each
    corrupted position, -1 where none. ``target``: {clean_index, corrupted_index, text}; ``clean_value`` /
    ``corrupted_value`` its log-probability in each run. ``cost``: the work done in full-pass units. ``corrupted``: the
    corrupted snippet."""

    model: dict
    kind: str
    description: str
    method: str
    target: dict
    clean_value: float
    corrupted_value: float
    layers: np.ndarray
    node_ids: np.ndarray
    node_types: tuple[str, ...]
    node_texts: tuple[str, ...]
    node_categories: tuple[str | None, ...]
    n_positions: np.ndarray
    restored: np.ndarray
    effect: np.ndarray
    all_restored: np.ndarray
    category_restored: dict[str, np.ndarray]
    aligned: np.ndarray
    unaligned_clean: np.ndarray
    unaligned_corrupted: np.ndarray
    skipped: dict[int, str] = field(default_factory=dict)
    note: str = ""
    cost: float = 0.0
    corrupted: str = ""

    def top_cells(self, k: int = 10) -> list[tuple[int, int, float]]:
        """The ``k`` cells ``(layer, span index, restored)`` with the largest |restored| (NaN cells left out)."""
        flat = np.abs(np.nan_to_num(self.restored, nan=-1.0)).ravel()
        cells = [divmod(int(i), self.restored.shape[1]) for i in np.argsort(-flat, kind="stable")[:k]]
        return [(int(self.layers[r]), c, float(self.restored[r, c])) for r, c in cells
                if not math.isnan(self.restored[r, c])]

    def category_table(self) -> Any:
        """pandas DataFrame, one row per layer: ``layer``, ``all spans`` (every span patched at once), then one
        column per category (its spans patched together): the share of the clean value restored."""
        import pandas as pd

        cols = {"layer": self.layers.astype(np.int64), "all spans": self.all_restored}
        cols.update({c: v for c, v in self.category_restored.items()})
        return pd.DataFrame(cols)

    def to_dict(self) -> dict:
        """The JSON layout of ``python -m asc intervene --patch --json`` (NaN written as null)."""
        def clean(a: np.ndarray) -> list:
            return [None if isinstance(v, float) and math.isnan(v) else v for v in np.asarray(a).tolist()] \
                if np.asarray(a).ndim == 1 else [clean(row) for row in a]

        return {
            "model": dict(self.model), "corruption": {"kind": self.kind, "description": self.description,
                                                         "corrupted": self.corrupted},
            "method": self.method, "target": dict(self.target), "clean_value": self.clean_value,
            "corrupted_value": self.corrupted_value, "layers": self.layers.tolist(),
            "spans": [{"node": int(n), "type": t, "text": x, "category": c, "positions": int(p),
                       "skipped": self.skipped.get(int(n))}
                      for n, t, x, c, p in zip(self.node_ids, self.node_types, self.node_texts, self.node_categories,
                                               self.n_positions, strict=True)],
            "restored": clean(self.restored), "effect": clean(self.effect), "all_restored": clean(self.all_restored),
            "category_restored": {c: clean(v) for c, v in self.category_restored.items()},
            "aligned": self.aligned.tolist(), "unaligned_clean": self.unaligned_clean.tolist(),
            "unaligned_corrupted": self.unaligned_corrupted.tolist(), "note": self.note, "cost": self.cost,
        }


def _map_offset(corruption: Corruption, b: int) -> int | None:
    """Character offset ``b`` of the source in the corrupted text; None when it lies inside an edit."""
    shift = 0
    for e in corruption.edits:
        if e.start < b < e.end:
            return None
        if e.end <= b and not (e.start == e.end == b):
            shift += len(e.new) - len(e.old)
    return b + shift


def _touches_edit(corruption: Corruption, start: int, end: int) -> bool:
    """Whether the characters ``start:end`` of the source overlap an edit (or hold an insertion inside them)."""
    return any((start < e.end and e.start < end) if e.start < e.end else start < e.start < end
               for e in corruption.edits)


def align_tokens(corruption: Corruption, clean: tuple[np.ndarray, ...], corrupted: tuple[np.ndarray, ...]
                 ) -> np.ndarray:
    """(T',) int64: for each corrupted token, its aligned clean token or -1 (module doc). ``clean`` and
    ``corrupted``: :func:`asc.scores.encode`'s ``(ids, start, end, special)``."""
    ids, start, end, special = clean
    ids2, start2, end2, special2 = corrupted
    by_span = {(int(s), int(e)): j for j, (s, e) in enumerate(zip(start2, end2, strict=True)) if not special2[j]}
    anchors = [(i, j) for i, j in zip(np.flatnonzero(special)[:1], np.flatnonzero(special2)[:1], strict=False)
               if i == j == 0 and ids[i] == ids2[j]]  # a BOS both runs start with
    for i in range(len(ids)):
        if special[i] or _touches_edit(corruption, int(start[i]), int(end[i])):
            continue
        a, b = _map_offset(corruption, int(start[i])), _map_offset(corruption, int(end[i]))
        j = by_span.get((a, b)) if a is not None and b is not None else None
        if j is not None and ids2[j] == ids[i] and (not anchors or (i > anchors[-1][0] and j > anchors[-1][1])):
            anchors.append((i, j))
    out = np.full(len(ids2), -1, dtype=np.int64)
    edges = [(-1, -1), *anchors, (len(ids), len(ids2))]
    for (i0, j0), (i1, j1) in zip(edges[:-1], edges[1:], strict=False):
        if i1 - i0 == j1 - j0:  # the gap between two anchors: as many tokens in both runs, paired in order
            out[j0 + 1:j1] = np.arange(i0 + 1, i1)
        if j1 < len(ids2):
            out[j1] = i1
    return out


def span_nodes(tree: SyntaxTree, corruption: Corruption, spans: str | Sequence[int], stop: int) -> list[int]:
    """Node ids of the clean tree patched (module doc): ``"changed"``, ``"after"`` (up to character ``stop``) or
    the ids given."""
    if not isinstance(spans, str):
        bad = [n for n in spans if not 0 <= int(n) < tree.n_nodes]
        if bad:
            raise InputError(f"node ids {bad} are not in the snippet's tree (0..{tree.n_nodes - 1})")
        return [int(n) for n in spans]
    if spans not in ("changed", "after"):
        raise InputError(f"spans={spans!r}: choose 'changed', 'after' or a list of node ids")
    nodes = list(dict.fromkeys(tree.covering(e.start, e.end) for e in corruption.edits))
    if spans == "after" and corruption.edits:
        first = corruption.edits[0].start
        leaf = tree.named & ~np.isin(np.arange(tree.n_nodes), tree.parent[tree.named])
        nodes += [int(n) for n in np.flatnonzero(leaf & (tree.start >= first) & (tree.end <= stop))
                  if int(n) not in nodes]
    return sorted(nodes, key=lambda n: (int(tree.start[n]), -int(tree.end[n])))


def default_target(bundle: ModelBundle, source: str, offset: int | None = None) -> int:
    """The clean token index of the target: the token at character ``offset`` (:func:`asc.why.targets.token_at`), by default
    the snippet's last token that is not whitespace. An :class:`InputError` when there is none."""
    _, start, end, special = encode(bundle, source)
    text = [source[s:e] for s, e in zip(start.tolist(), end.tolist(), strict=True)]
    if offset is None:
        picks = [i for i in range(1, len(text)) if not special[i] and text[i].strip()]
        if not picks:
            raise InputError("the snippet has no token to predict after the first: give a longer snippet")
        return picks[-1]
    index = token_at(text, start, end, special, offset)  # the rule attribute's --at follows
    if index is None or index == 0:
        raise InputError("no token of the snippet starts at or after that position: give a position inside the code")
    return index


def _locate(bundle: ModelBundle, corruption: Corruption, target: int | Any | None, clean_tok: tuple[np.ndarray, ...],
            aligned: np.ndarray) -> tuple[int, int]:
    """The target's token index in the clean and in the corrupted run, or an :class:`InputError`."""
    index = default_target(bundle, corruption.source) if target is None else int(getattr(target, "index", target))
    if not 1 <= index < len(clean_tok[0]):
        raise InputError(f"target token {index} is not a predicted token of the snippet (1..{len(clean_tok[0]) - 1})")
    where = np.flatnonzero(aligned == index)
    if not len(where):
        raise InputError("the target token is inside the corruption (it has no counterpart in the corrupted "
                         "text): choose a later token")
    first = corruption.first_change
    if first is not None and first >= int(clean_tok[1][index]):  # the target reads only text before itself
        src = corruption.source
        line, col = src.count("\n", 0, first) + 1, first - (src.rfind("\n", 0, first) + 1) + 1
        raise InputError(f"the target token {index} comes before the corruption's first edit (at {line}:{col}), so "
                         "nothing it is predicted from changes: give --at a position after the edit")
    if max(index, int(where[0])) >= bundle.context_length:
        raise InputError(f"the target token {index} lies past the model's context of {bundle.context_length} tokens: "
                         "pick a token nearer the start, or shorten the snippet")
    return index, int(where[0])


def target_values(bundle: ModelBundle, corruption: Corruption, target: int | Any | None = None) -> dict:
    """The target without patching, two forward passes: ``{clean_index, corrupted_index, text, clean_value,
    corrupted_value}`` (its log-probability in each run)."""
    bundle.require_causal("next-token probabilities")
    clean_tok, bad_tok = encode(bundle, corruption.source), encode(bundle, corruption.corrupted)
    index, t_bad = _locate(bundle, corruption, target, clean_tok, align_tokens(corruption, clean_tok, bad_tok))
    values = [float(score_ids(bundle, text, *tok).logprob[k])
              for text, tok, k in ((corruption.source, clean_tok, index), (corruption.corrupted, bad_tok, t_bad))]
    return {"clean_index": index, "corrupted_index": t_bad, "text": _text(corruption.source, clean_tok, index),
            "clean_value": values[0], "corrupted_value": values[1]}


def _text(source: str, tok: tuple[np.ndarray, ...], i: int) -> str:
    return source[int(tok[1][i]):int(tok[2][i])]


def _nan_share(delta: np.ndarray, full: float) -> np.ndarray:
    return delta / full if abs(full) > 1e-12 else np.full_like(delta, np.nan)


def patch(bundle: ModelBundle, corruption: Corruption, target: int | Any | None = None,
          layers: Sequence[int] | None = None, spans: str | Sequence[int] = "changed", language: str = "python",
          method: str = "auto", on_progress: Callable[[str, int, int], None] | None = None) -> Patching:
    """Activation patching of ``corruption`` (module doc). ``target``: the clean token index of the predicted token
    (or an object with an ``index``, e.g. attribution's target; default :func:`default_target`); ``layers``: the
    layers patched (default all); ``method``: ``"cached"``, ``"hooks"`` or ``"auto"``
    (:func:`asc.why.residual.record`); ``on_progress(stage, done, total)``: after the two recorded runs and after
    each layer patched, for a progress bar (an exception it raises stops the work)."""
    bundle.require_causal("a residual stream to patch")
    clean_tok, bad_tok = encode(bundle, corruption.source), encode(bundle, corruption.corrupted)
    aligned = align_tokens(corruption, clean_tok, bad_tok)
    index, t_bad = _locate(bundle, corruption, target, clean_tok, aligned)
    all_layers = bundle.n_layers
    picked = np.arange(all_layers) if layers is None else np.asarray(sorted(set(layers)), dtype=np.int64)
    if len(picked) and not (0 <= picked.min() and picked.max() < all_layers):
        raise InputError(f"layers must lie in 0..{all_layers - 1}")
    # the model runs on at most its context: tokens past it come after the target, which cannot read them
    n_clean, n_bad = (min(len(tok[0]), bundle.context_length) for tok in (clean_tok, bad_tok))
    if on_progress is not None:
        on_progress("the clean and the corrupted run", 0, len(picked) + 1)
    clean_runs, bad_runs = record(bundle, clean_tok[0][:n_clean], method), record(bundle, bad_tok[0][:n_bad], method)
    if on_progress is not None:
        on_progress("the clean and the corrupted run", 1, len(picked) + 1)
    clean_value, bad_value = float(clean_runs.logprobs[index - 1]), float(bad_runs.logprobs[t_bad - 1])
    tree = parse(corruption.source, language)
    cmap = load_categories(language)
    nodes = span_nodes(tree, corruption, spans, int(clean_tok[1][index]))
    alignment = align(tree, clean_tok[1], clean_tok[2], clean_tok[3])
    n = min(len(clean_tok[0]), len(bad_tok[0]))
    same = (clean_tok[0][:n] == bad_tok[0][:n]) & (aligned[:n] == np.arange(n))
    first_diff = int(np.argmin(same)) if not same.all() else n
    clean_of = {int(i): j for j, i in enumerate(aligned.tolist()) if i >= 0}
    skipped: dict[int, str] = {}
    span_pairs: list[np.ndarray] = []
    for node in nodes:
        toks = alignment.tokens_of(node)
        pairs = np.array([(i, clean_of[int(i)]) for i in toks if int(i) in clean_of], dtype=np.int64).reshape(-1, 2)
        inside = (pairs[:, 0] < n_clean) & (pairs[:, 1] < n_bad)
        if len(pairs) and not inside.any():
            skipped[node] = f"past the model's context of {bundle.context_length} tokens (after the target)"
        elif len(toks) and not len(pairs):
            skipped[node] = "no aligned token (the corruption changed its token count)"
        elif not len(toks):
            skipped[node] = "no token of its own"
        span_pairs.append(pairs[inside])
    categories = [cmap.category_of(tree.type[n]) for n in nodes]
    groups: dict[str, np.ndarray] = {}
    for c in dict.fromkeys(c for c in categories if c):
        groups[c] = np.concatenate([p for p, cc in zip(span_pairs, categories, strict=True) if cc == c])
    every = np.concatenate(span_pairs) if span_pairs else np.zeros((0, 2), np.int64)
    rows = [*span_pairs, *groups.values(), every]
    values = _sweep(clean_runs, bad_runs, picked, rows, first_diff, t_bad, int(bad_tok[0][t_bad]), bad_value,
                    None if on_progress is None else lambda a, layer: on_progress(
                        f"layer {layer + 1} of {all_layers} patched", a + 2, len(picked) + 1))
    full = clean_value - bad_value
    effect = values - bad_value
    share = _nan_share(effect, full)
    S = len(nodes)
    for k, node in enumerate(nodes):
        if node in skipped:
            share[:, k] = effect[:, k] = np.nan
    unaligned_clean = np.setdiff1d(np.arange(len(clean_tok[0])), aligned[aligned >= 0])
    unaligned_bad = np.flatnonzero(aligned < 0)
    notes = []
    if abs(full) <= 1e-12:
        notes.append("the corruption does not change the target (clean == corrupted): no share to restore (NaN)")
    if n_clean < len(clean_tok[0]) or n_bad < len(bad_tok[0]):
        notes.append(f"the snippet is longer than the model's context of {bundle.context_length} tokens: both runs "
                     "stop there (the target comes before, and cannot read what follows)")
    if len(unaligned_bad) or len(unaligned_clean):
        notes.append(f"{len(unaligned_clean)} clean and {len(unaligned_bad)} corrupted tokens have no counterpart "
                     "(the corruption changed the token count there); only aligned positions were patched")
    return Patching(
        model=bundle.summary(), kind=corruption.kind, description=corruption.description, method=clean_runs.method,
        corrupted=corruption.corrupted,
        target={"clean_index": index, "corrupted_index": t_bad,
                "text": _text(corruption.source, clean_tok, index)},
        clean_value=clean_value, corrupted_value=bad_value, layers=picked,
        node_ids=np.asarray(nodes, dtype=np.int64), node_types=tuple(tree.type[n] for n in nodes),
        node_texts=tuple(tree.text(n, limit=60) for n in nodes), node_categories=tuple(categories),
        n_positions=np.array([len(p) for p in span_pairs], dtype=np.int64), restored=share[:, :S], effect=effect[:, :S],
        all_restored=share[:, -1], category_restored={c: share[:, S + k] for k, c in enumerate(groups)},
        aligned=aligned, unaligned_clean=unaligned_clean, unaligned_corrupted=unaligned_bad, skipped=skipped,
        note="; ".join(notes), cost=2.0 + bad_runs.layer_runs)


def _sweep(clean: ResidualRuns, bad: ResidualRuns, layers: np.ndarray, rows: list[np.ndarray], first_diff: int,
           t_bad: int, token: int, bad_value: float,
           layer_done: Callable[[int, int], None] | None = None) -> np.ndarray:
    """(L, R) the target's log-probability with each row's pairs (clean index, corrupted index) patched at each
    layer. Pairs before ``first_diff`` are no-ops (dropped); a row left empty is the corrupted value, not run.
    Identical rows run once; the rows of one layer run in batches of at most :data:`_BUDGET_TOKENS` tokens."""
    live = [r[r[:, 1] >= first_diff] for r in rows]
    keys = [tuple(map(tuple, r.tolist())) for r in live]
    unique = list(dict.fromkeys(k for k in keys if k))
    out = np.full((len(layers), len(rows)), bad_value)
    per_batch = max(1, _BUDGET_TOKENS // max(1, len(bad.ids)))
    for a, layer in enumerate(layers.tolist()):
        got: dict[tuple, float] = {}
        for b0 in range(0, len(unique), per_batch):
            chunk = unique[b0:b0 + per_batch]
            batch = []
            for key in chunk:
                pairs = np.asarray(key, dtype=np.int64)
                batch.append((pairs[:, 1], clean.inputs[layer][pairs[:, 0]]))
            got.update(zip(chunk, bad.run(layer, batch, t_bad - 1, token).tolist(), strict=True))
        for r, key in enumerate(keys):
            if key:
                out[a, r] = got[key]
        if layer_done is not None:
            layer_done(a, int(layer))
    return out
