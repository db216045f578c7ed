"""Attention maps of a model on code, at the level of CodeSyntax's words, and corpus runs of head scores.

:func:`snippet_attention` runs one forward pass with ``output_attentions=True``. SDPA kernels cannot
return attention weights, so the model is switched to eager attention for that call only, under the
bundle's lock, and switched back afterwards (nothing is left changed on a shared model). The
sub-token matrices of every layer are merged to word level right away (:func:`probes.codesyntax.heads.word_attention`):
each model sub-token belongs to the word its characters overlap most (ties: the first word); special
tokens and tokens overlapping no word are dropped. A sub-token spanning two words (e.g. ``):``) goes
to one of them, and the other word then has no sub-token of its own (zero row and column).

Memory is ``layers x heads x n^2`` floats per snippet (SmolLM2, 512 tokens: 283 MB); snippets longer
than ``max_tokens`` are refused with :class:`asc.errors.InputError`, never truncated (a cut snippet
would lose gold edges silently).

:func:`run_attention` scores every head of a model on a corpus (relations from
:mod:`probes.codesyntax.relations`, scores and baselines from :mod:`probes.codesyntax.heads`) and writes a run folder::

    <out>/<model_key>/samples.json   the CodeSyntax-layout labels of the snippets scored (with their split)
    <out>/<model_key>/heads.npz      hit and edge counts per split (HeadScores)
    <out>/<model_key>/baselines.csv  offset / keyword / combined baselines on the same edges and splits
    <out>/<model_key>/meta.json      model, direction, corpus, counts, skipped snippets, timings
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.atomic import write_atomic
from asc.corpus.listing import run_folders
from asc.device import model_device
from asc.errors import InputError
from probes.codesyntax.heads import HeadScorer, HeadScores, baseline_scores, split_samples, word_attention
from probes.codesyntax.relations import extract_many
from probes.codesyntax.samples import Sample
from probes.features import PROBE_MAX_TOKENS, model_key

if TYPE_CHECKING:
    import pandas as pd

    from asc.models import ModelBundle

__all__ = ["AttentionRun", "attention_job", "attention_runs", "load_attention_run", "relation_table", "run_attention", "snippet_attention", "sub_to_word"]

log = logging.getLogger(__name__)



def sub_to_word(sample: Sample, start: np.ndarray, end: np.ndarray, special: np.ndarray) -> np.ndarray:
    """For each sub-token (character span ``start..end``), the word it overlaps most, or -1."""
    n_chars = len(sample.code)
    owner = np.full(n_chars + 1, -1, dtype=np.int64)
    for w, (a, b) in enumerate(sample.spans):
        if b > a:
            owner[a:b] = np.where(owner[a:b] < 0, w, owner[a:b])
    out = np.full(len(start), -1, dtype=np.int64)
    for i, (a, b) in enumerate(zip(start.tolist(), end.tolist())):
        if special[i] or b <= a:
            continue
        words = owner[a:b]
        words = words[words >= 0]
        if words.size:
            values, counts = np.unique(words, return_counts=True)
            out[i] = int(values[np.argmax(counts)])  # most overlap; ties: the first word
    return out


def snippet_attention(bundle: ModelBundle, sample: Sample, *, max_tokens: int = PROBE_MAX_TOKENS) -> np.ndarray:
    """Word-level attention ``(layers, heads, n_words, n_words)`` of ``sample.code`` (see the module doc)."""
    import torch

    enc = bundle.tokenizer(sample.code, add_special_tokens=True, return_offsets_mapping=True,
                           return_special_tokens_mask=True, verbose=False)
    ids = enc["input_ids"]
    limit = min(max_tokens, bundle.context_length)
    if len(ids) > limit:
        raise InputError(f"the snippet has {len(ids)} tokens; attention maps take at most {limit} "
                         f"(memory grows with the square of the length): choose a shorter function")
    offsets = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    words = sub_to_word(sample, offsets[:, 0], offsets[:, 1], np.asarray(enc["special_tokens_mask"], dtype=bool))
    model = bundle.model
    with bundle.lock, torch.inference_mode():
        previous = model.config._attn_implementation
        try:
            if previous != "eager":
                model.set_attn_implementation("eager")
            out = model(input_ids=torch.tensor([ids], device=model_device(model)), output_attentions=True)
        finally:
            if previous != "eager":
                model.set_attn_implementation(previous)
    layers = [word_attention(a[0].float().cpu().numpy()[None], words, len(sample.tokens))[0] for a in out.attentions]
    return np.stack(layers)


@dataclass(frozen=True, eq=False)
class AttentionRun:
    """A scored run read back from disk: head scores, baselines, the samples and their splits."""

    folder: Path
    meta: dict
    scores: HeadScores
    baselines: Any  # pandas DataFrame (relation, metric, k, offset, keyword, combined, joint, ...)
    samples: tuple[Sample, ...]
    splits: tuple[str, ...]

    @property
    def model(self) -> str:
        return str(self.meta.get("model", self.folder.name))


def run_attention(bundle: ModelBundle, codes: Sequence[str], out: str | Path, *, corpus: str = "", spec: str = "",
                  ks: Sequence[int] = range(1, 21),
                  val_fraction: float = 0.5, seed: int = 0, max_tokens: int = PROBE_MAX_TOKENS,
                  on_progress: Callable[[str, int, int], None] | None = None,
                  should_stop: Callable[[], bool] | None = None) -> AttentionRun:
    """Score every head of ``bundle`` on ``codes`` against their relations; write and return the run.

    Snippets that do not parse, have no relation edge, or are longer than ``max_tokens`` are skipped
    (counted in ``meta``). The val/test split is over the snippets kept, seeded. Encoders are read
    from the head's row, decoders from the dependent's row back to the head (:mod:`probes.codesyntax.heads`).
    """
    t0 = time.perf_counter()
    samples = [s for s in extract_many(codes) if any(s.relns.values())]
    if not samples:
        raise InputError("no snippet could be labelled (none parses as Python or has a relation edge)")
    splits = split_samples(len(samples), val_fraction, seed)
    scorer = HeadScorer(ks=tuple(ks), causal=bool(bundle.causal))
    kept, kept_splits, too_long = [], [], 0
    for i, (sample, split) in enumerate(zip(samples, splits)):
        if should_stop and should_stop():
            raise InterruptedError("attention run stopped")
        try:
            wa = snippet_attention(bundle, sample, max_tokens=max_tokens)
        except InputError:
            too_long += 1
        else:
            scorer.add(sample, wa, str(split))
            kept.append(sample)
            kept_splits.append(str(split))
        if on_progress:  # skipped snippets count too: the bar reaches its end
            on_progress("attention", i + 1, len(samples))
    if not kept:
        limit = min(max_tokens, bundle.context_length)
        raise InputError(f"every snippet was longer than {limit} tokens (the model's limit for attention maps): "
                         "choose shorter functions, e.g. a smaller --max-lines")
    scores = scorer.result()
    baselines = baseline_scores(zip(kept, kept_splits), ks=tuple(ks), causal=bool(bundle.causal))
    folder = Path(out) / model_key(bundle)
    folder.mkdir(parents=True, exist_ok=True)
    docs = [s.to_json() | {"split": sp} for s, sp in zip(kept, kept_splits)]
    write_atomic(folder / "samples.json", lambda p: p.write_text(json.dumps(docs)))
    arrays = {f"{kind}_{sp}": getattr(scores, kind)[sp] for kind in ("hits", "edges") for sp in scores.hits}
    write_atomic(folder / "heads.npz", lambda p: np.savez_compressed(p, **arrays))
    write_atomic(folder / "baselines.csv", lambda p: baselines.to_csv(p, index=False))
    meta = {"model": bundle.name, "spec": spec or bundle.name, "source": bundle.source, "kind": "decoder" if bundle.causal else "encoder",
            "direction": "dependent -> head" if bundle.causal else "head -> dependent", "corpus": corpus,
            "n_codes": len(codes), "n_labelled": len(samples), "n_scored": len(kept), "too_long": too_long,
            "ks": list(scores.ks), "relations": list(scores.relations), "val_fraction": val_fraction, "seed": seed,
            "max_tokens": max_tokens, "n_samples": scores.n_samples, "seconds": round(time.perf_counter() - t0, 1)}
    write_atomic(folder / "meta.json", lambda p: p.write_text(json.dumps(meta, indent=1)))
    return AttentionRun(folder, meta, scores, baselines, tuple(kept), tuple(kept_splits))


def attention_job(corpus: str, out: str | Path, *, spec: str = "", limit: int | None = 200, max_lines: int = 40,
                  seed: int = 0, max_tokens: int = PROBE_MAX_TOKENS, roots: Sequence[Path] | None = None,
                  ) -> Callable[[ModelBundle, Callable[[str, int, int], None], Callable[[], bool]], None]:
    """A ``call(bundle, on_progress, should_stop)`` for :meth:`asc.jobs.JobQueue.submit_call`: loads the corpus
    (confined to ``roots`` when given: :func:`asc.corpus.sources.check_corpus_spec`) and runs
    :func:`run_attention` into ``out``."""
    def call(bundle: ModelBundle, on_progress: Callable[[str, int, int], None], should_stop: Callable[[], bool]) -> None:
        from asc.corpus.sources import load_corpus

        on_progress("loading corpus", 0, 1)
        codes = [s.source for s in load_corpus(corpus, limit=limit, max_lines=max_lines, roots=roots)]
        try:
            run_attention(bundle, codes, out, corpus=corpus, spec=spec, seed=seed, max_tokens=max_tokens,
                          on_progress=on_progress, should_stop=should_stop)
        except InterruptedError:
            log.info("attention run stopped")

    return call


def attention_runs(root: str | Path) -> list[Path]:
    """Run folders (with meta.json and heads.npz) under ``root``, newest first."""
    return run_folders(root, "heads.npz")


def load_attention_run(folder: str | Path) -> AttentionRun:
    """Read a run folder written by :func:`run_attention`."""
    import pandas as pd

    folder = Path(folder)
    meta = json.loads((folder / "meta.json").read_text())
    arrays = np.load(folder / "heads.npz")
    splits = sorted({k.split("_", 1)[1] for k in arrays.files})
    scores = HeadScores(tuple(meta["relations"]), tuple(meta["ks"]), meta["kind"] == "decoder",
                        {sp: arrays[f"hits_{sp}"] for sp in splits}, {sp: arrays[f"edges_{sp}"] for sp in splits},
                        dict(meta.get("n_samples", {})))
    docs = json.loads((folder / "samples.json").read_text())
    samples = tuple(Sample.from_json(d, index=i) for i, d in enumerate(docs))
    return AttentionRun(folder, meta, scores, pd.read_csv(folder / "baselines.csv"), samples,
                        tuple(d.get("split", "test") for d in docs))


def relation_table(run: AttentionRun, metric: str = "first", k: int = 1, min_edges: int = 1) -> pd.DataFrame:
    """CodeSyntax Tables 3/6: per relation, the best head (chosen on val) and its test score next to the
    offset, keyword and combined baselines, and model minus combined; a last row ``mean`` over relations."""
    import pandas as pd

    best = run.scores.best_heads(metric, k, min_edges)
    base = run.baselines[(run.baselines["metric"] == metric) & (run.baselines["k"] == k)]
    table = best.merge(base[["relation", "offset", "keyword", "combined"]], on="relation", how="left")
    table = table.rename(columns={"test_score": "model"})
    table["difference"] = table["model"] - table["combined"]
    cols = ["relation", "n_val", "n_test", "layer", "head", "val_score", "model", "offset", "keyword", "combined",
            "difference"]
    table = table[cols]
    if len(table):
        mean = {c: table[c].mean() for c in ("val_score", "model", "offset", "keyword", "combined", "difference")}
        mean |= {"relation": "mean", "n_val": int(table["n_val"].sum()), "n_test": int(table["n_test"].sum())}
        table = pd.concat([table, pd.DataFrame([mean])], ignore_index=True)
    return table.astype({"layer": "Int64", "head": "Int64", "n_val": "Int64", "n_test": "Int64"})
