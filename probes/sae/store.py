"""SAE folders as the app and the notebooks read them: listed under a runs root, opened with what was saved beside them.

An SAE folder (SAELens's layout, :func:`probes.sae.model.save_sae`) may hold, next to ``cfg.json`` and the weights:

* ``quality.json``, the measures :func:`probes.sae.quality.evaluate_sae` gave on a corpus (:func:`save_quality`;
  ``python -m probes sae eval`` and the app's job write it);
* ``activations/*.npz``, the latents on a corpus bound to its syntax (:func:`probes.sae.corpus.save_activations`),
  one file per corpus, snippet limit, token cap and weights, named by :func:`activation_path` (``python -m probes
  sae enrich`` and ``show`` write them; so does the app's job).

:func:`open_report` reads one such folder into an :class:`SaeReport` (the SAE's config, its quality when saved, the
activations and their :class:`~probes.sae.enrichment.Enrichment`), and :func:`sae_job` is the queue's job that trains
an SAE, measures it and saves its activations: what the *Syntax features* page's demo runs. Nothing here runs a
model but the job.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asc.atomic import write_atomic
from asc.errors import InputError
from probes.sae.corpus import CorpusActivations, corpus_activations, load_activations, save_activations
from probes.sae.dashboard import latent_card
from probes.sae.enrichment import Enrichment, enrich
from probes.sae.model import CFG_FILE, WEIGHTS_FILE, SaeConfig, check_sae_for, config_dict, load_sae
from probes.sae.quality import SaeQuality, evaluate_sae

if TYPE_CHECKING:
    from asc.models import ModelBundle

__all__ = ["QUALITY_FILE", "SaeReport", "activation_key", "activation_path", "default_layer", "open_report",
           "read_quality", "sae_folders", "sae_job", "save_quality", "saved_activations"]

QUALITY_FILE = "quality.json"
ACTIVATIONS = "activations"


def sae_folders(root: str | Path) -> list[Path]:
    """The SAE folders (those with a ``cfg.json``) directly under ``root`` or one level deeper, sorted; [] when
    ``root`` is absent."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = {p.parent for p in (*root.glob(f"*/{CFG_FILE}"), *root.glob(f"*/*/{CFG_FILE}"))}
    return sorted(found)


def activation_key(folder: str | Path, corpus: str, limit: int | None, max_tokens: int, model: str) -> dict[str, object]:
    """What a folder's saved activations were computed from: the corpus, its snippet limit and token cap, the
    weights (their SHA-1) and the model."""
    weights = hashlib.sha1((Path(folder) / WEIGHTS_FILE).read_bytes()).hexdigest()
    return {"corpus": corpus, "limit": limit, "max_tokens": max_tokens, "weights": weights, "model": model}


def activation_path(folder: str | Path, key: dict[str, object]) -> Path:
    """Where the activations of ``key`` (:func:`activation_key`) go in ``folder``."""
    name = hashlib.sha1(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return Path(folder) / ACTIVATIONS / f"{name}.npz"


def saved_activations(folder: str | Path) -> list[tuple[dict[str, object], Path]]:
    """The activations saved in ``folder`` for its current weights: ``(key, path)`` pairs, newest first."""
    import numpy as np

    folder = Path(folder)
    try:
        weights = hashlib.sha1((folder / WEIGHTS_FILE).read_bytes()).hexdigest()
    except OSError:
        return []
    found = []
    for path in sorted((folder / ACTIVATIONS).glob("*.npz"), key=lambda p: p.stat().st_mtime, reverse=True):
        try:
            with np.load(path, allow_pickle=False) as data:
                key = json.loads(str(data["meta"])).get("key")
        except (OSError, KeyError, ValueError):
            continue
        if isinstance(key, dict) and key.get("weights") == weights:
            found.append((key, path))
    return found


def save_quality(folder: str | Path, quality: SaeQuality, corpus: str) -> Path:
    """Write ``quality`` (measured on ``corpus``) to ``folder/quality.json``, atomically."""
    text = json.dumps({"corpus": corpus, **quality.to_dict()}, indent=1)
    return write_atomic(Path(folder) / QUALITY_FILE, lambda tmp: tmp.write_text(text, encoding="utf-8"))


def read_quality(folder: str | Path) -> dict[str, Any] | None:
    """The measures saved in ``folder/quality.json``, or None (none saved, or unreadable)."""
    try:
        raw = json.loads((Path(folder) / QUALITY_FILE).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError):
        return None
    return raw if isinstance(raw, dict) else None


@dataclass(frozen=True)
class SaeReport:
    """One SAE folder as read (module doc): its config, its ``quality`` (None: no eval saved), the ``corpus`` its
    activations were computed on (their key), the activations and their enrichment."""

    folder: Path
    cfg: SaeConfig
    quality: dict[str, Any] | None
    corpus: dict[str, object]
    acts: CorpusActivations
    enrichment: Enrichment

    def card(self, latent: int, top: int = 10) -> dict[str, Any]:
        """The dashboard of ``latent`` (:func:`probes.sae.dashboard.latent_card`)."""
        return latent_card(self.acts, self.enrichment, latent, top=top)

    def to_dict(self, top: int = 10) -> dict[str, Any]:
        """The JSON export: the config, quality, corpus and the enrichment (:meth:`Enrichment.to_dict`)."""
        cfg = {k: v for k, v in config_dict(self.cfg).items() if k != "metadata"}
        return {"folder": self.folder.name, "config": cfg, "quality": self.quality, "corpus": self.corpus,
                "enrichment": self.enrichment.to_dict(top)}


def open_report(folder: str | Path, which: int = 0, *, n_boot: int = 200, seed: int = 0) -> SaeReport:
    """The SAE of ``folder`` with its ``which``-th saved activations (:func:`saved_activations`, newest first)
    enriched; an InputError naming the fix when the folder is no SAE or holds no activations yet."""
    folder = Path(folder)
    sae = load_sae(folder)
    saved = saved_activations(folder)
    if not saved:
        raise InputError(f"{folder.name} holds no activations on a corpus yet: run `python -m probes sae enrich "
                         f"{folder}` (it saves them in the folder)")
    if not 0 <= which < len(saved):
        raise InputError(f"{folder.name} holds {len(saved)} saved activations: pick one of 0 to {len(saved) - 1}")
    key, path = saved[which]
    acts = load_activations(path, key)
    if acts is None:
        raise InputError(f"{path} is not readable: run `python -m probes sae enrich {folder}` again")
    result = enrich(acts.matrix(), acts.snippet, acts.category, acts.node_type, acts.categories, acts.node_types,
                    n_boot=n_boot, seed=seed)
    return SaeReport(folder, sae.cfg, read_quality(folder), key, acts, result)


def default_layer(n_layers: int) -> int:
    """The block an SAE reads by default: 30% of the way down (block 9 of SmolLM2's 30, ``make sae``'s)."""
    return max(0, round(0.3 * (n_layers - 1)))


Progress = Callable[[str, int, int], None]
Job = Callable[["ModelBundle", Progress, Callable[[], bool]], None]


def sae_job(out: str | Path, *, train_corpus: str, tokens: int, width: int, k: int, corpus: str = "humaneval",
            limit: int | None = None, layer: int | None = None, max_tokens: int = 256, seed: int = 0,
            batch_size: int = 512, train_limit: int | None = None) -> Job:
    """The queue's job (``call(bundle, on_progress, should_stop)``): train a TopK SAE of ``width`` latents (``k``
    active) on ``tokens`` tokens of ``train_corpus`` (its first ``train_limit`` snippets) at ``layer`` (default
    :func:`default_layer`) into ``out``, then measure it on the first ``limit`` snippets of ``corpus``
    (``quality.json``) and save its activations there. The activation buffer holds at most ``tokens`` tokens (a
    short run reads no more of the model than it trains on)."""
    def call(bundle: ModelBundle, on_progress: Progress, should_stop: Callable[[], bool]) -> None:
        from asc.arch import layer_count
        from asc.corpus.sources import load_corpus
        from probes.sae.train import TrainSettings, train_sae

        at = default_layer(layer_count(bundle.model)) if layer is None else layer
        settings = TrainSettings(model=bundle.name, layer=at, corpus=train_corpus, tokens=tokens, width=width, k=k,
                                 seed=seed, batch_size=batch_size, max_tokens=max_tokens,
                                 buffer_tokens=min(16384, max(tokens, batch_size)))
        train = [s.source for s in load_corpus(train_corpus, limit=train_limit)]
        train_sae(bundle, train, settings, out, on_progress=lambda d, t, _loss: on_progress("training", d, t),
                  should_stop=should_stop)
        if should_stop():
            return
        sae = load_sae(out)
        check_sae_for(sae, bundle)
        sources = [s.source for s in load_corpus(corpus, limit=limit)]
        quality = evaluate_sae(sae, bundle, sources, at, max_tokens=max_tokens,
                               on_progress=lambda d, t: on_progress("measuring", d, t))
        save_quality(out, quality, corpus)
        acts = corpus_activations(sae, bundle, sources, at, max_tokens=max_tokens,
                                  on_progress=lambda d, t: on_progress("activations", d, t))
        key = activation_key(out, corpus, limit, max_tokens, bundle.name)
        save_activations(acts, activation_path(out, key), key)

    return call
