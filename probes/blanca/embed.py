"""Text embeddings for BLANCA: one vector per text from a loaded model, cached on disk.

- **sentence-transformers folders** (the embedded ``minilm-l6``, a fine-tuned model of
  :mod:`probes.blanca.finetune`, any folder with a ``modules.json``): the folder's own pooling
  (``1_Pooling/config.json``: mean, CLS or last token, as flags or, since sentence-transformers 6, one
  ``pooling_mode`` name) over the last layer, and its ``max_seq_length`` (``sentence_bert_config.json``, or the
  tokenizer's ``model_max_length`` where version 6 keeps it); a test checks the vectors equal ``SentenceTransformer(folder).encode`` to 1e-6
  (before its final normalisation, which cosine distance does not see).
- **decoders** (SmolLM2, Gemma, any causal LM) and plain encoder folders: the mean of the last layer's token
  states (the issue's "decoders mean-pooled"; the paper embeds with sentence encoders only), at most
  :data:`~probes.features.PROBE_MAX_TOKENS` tokens, longer texts keep their head.

Vectors come from :func:`probes.features.extract_features` (length-sorted micro-batches on the model's device,
float32 out) and are stored per model and per set of texts under
``<cache>/<model_key>/blanca-<digest>-<pooling>-<max_tokens>.npy``: a second run, or the page after the command
line, never runs the model again.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from asc.atomic import write_atomic
from asc.errors import InputError
from probes.features import PROBE_MAX_TOKENS, extract_features, model_key

if TYPE_CHECKING:
    from asc.models import ModelBundle

__all__ = ["EmbeddingSettings", "cosine_distance", "embed_texts", "embedding_settings"]

log = logging.getLogger(__name__)

_ST_POOLING = {"pooling_mode_mean_tokens": "mean", "pooling_mode_cls_token": "first", "pooling_mode_lasttoken": "last"}
_ST_NAMES = {"mean": "mean", "cls": "first", "lasttoken": "last"}


@dataclass(frozen=True)
class EmbeddingSettings:
    """How a model's texts become vectors: ``pooling`` (mean, first = CLS, last), ``max_tokens`` per text, and
    ``origin``, where the choice came from (``sentence-transformers config`` or ``default``)."""

    pooling: str
    max_tokens: int
    origin: str


def embedding_settings(bundle: ModelBundle) -> EmbeddingSettings:
    """The pooling and length limit of ``bundle``: its sentence-transformers config when its folder has one,
    else mean pooling over :data:`~probes.features.PROBE_MAX_TOKENS` tokens."""
    folder = Path(bundle.source)
    if not (folder / "modules.json").is_file():
        return EmbeddingSettings("mean", PROBE_MAX_TOKENS, "default")
    try:
        modules = json.loads((folder / "modules.json").read_text())
        pool_dir = next((m.get("path", "") for m in modules if str(m.get("type", "")).endswith("Pooling")), None)
        pool_cfg = json.loads((folder / pool_dir / "config.json").read_text()) if pool_dir else {}
        st_cfg_path = folder / "sentence_bert_config.json"
        st_cfg = json.loads(st_cfg_path.read_text()) if st_cfg_path.is_file() else {}
    except (OSError, ValueError, AttributeError) as err:
        raise InputError(f"{folder}: unreadable sentence-transformers config ({err}); re-save the model with "
                         "SentenceTransformer.save") from None
    modes = [mode for key, mode in _ST_POOLING.items() if pool_cfg.get(key)]
    other = [k for k, v in pool_cfg.items() if k.startswith("pooling_mode_") and v and k not in _ST_POOLING]
    named = pool_cfg.get("pooling_mode")  # sentence-transformers 6 writes one name instead of flags
    if isinstance(named, str):
        (modes if named in _ST_NAMES else other).append(_ST_NAMES.get(named, named))
    if other or len(modes) > 1:
        raise InputError(f"{folder}: pooling {', '.join(other or modes)} is not supported; supported poolings are "
                         "mean, cls and lasttoken (one of them)")
    pooling = modes[0] if modes else "mean"
    tok_path = folder / "tokenizer_config.json"
    tok_cfg = json.loads(tok_path.read_text()) if tok_path.is_file() else {}
    limit = st_cfg.get("max_seq_length") or tok_cfg.get("model_max_length")  # v6 keeps it in the tokenizer's
    max_tokens = int(limit) if isinstance(limit, (int, float)) and 0 < limit < 1_000_000 else PROBE_MAX_TOKENS
    return EmbeddingSettings(pooling, max_tokens, "sentence-transformers config")


def _digest(texts: Sequence[str]) -> str:
    h = hashlib.sha256()
    for t in texts:
        h.update(t.encode("utf-8"))
        h.update(b"\x00")
    return h.hexdigest()[:16]


def embed_texts(bundle: ModelBundle, texts: Sequence[str], cache: str | Path | None = None, *,
                on_progress: Callable[[int, int], None] | None = None,
                should_stop: Callable[[], bool] | None = None) -> np.ndarray:
    """``(len(texts), hidden)`` float32 vectors of the last layer, pooled as :func:`embedding_settings` says;
    read from / written to ``cache`` when given. Empty texts are an :class:`~asc.errors.InputError`."""
    if not texts:
        raise InputError("no text to embed")
    if any(not t.strip() for t in texts):
        raise InputError("an empty text cannot be embedded: drop empty items from the task file")
    settings = embedding_settings(bundle)
    path = None
    if cache is not None:
        path = Path(cache) / model_key(bundle) / f"blanca-{_digest(texts)}-{settings.pooling}-{settings.max_tokens}.npy"
        if path.exists():
            vectors = np.load(path)
            if vectors.shape[0] == len(texts):
                log.info("embeddings from cache %s", path)
                if on_progress:
                    on_progress(len(texts), len(texts))
                return vectors
    states, truncated = extract_features(bundle, texts, settings.pooling, max_tokens=settings.max_tokens,
                                         on_progress=on_progress, should_stop=should_stop)
    vectors = np.ascontiguousarray(states[:, -1, :])
    if truncated:
        log.info("%d of %d texts were cut to %d tokens", truncated, len(texts), settings.max_tokens)
    if path is not None:
        write_atomic(path, lambda tmp: np.save(tmp, vectors))
    return vectors


def cosine_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Row-wise ``1 - cos(a_i, b_i)`` of two ``(n, d)`` arrays, in [0, 2]; a zero vector is at distance 1."""
    na = np.linalg.norm(a, axis=1)
    nb = np.linalg.norm(b, axis=1)
    denom = np.where((na > 0) & (nb > 0), na * nb, 1.0)
    cos = np.einsum("ij,ij->i", a, b) / denom
    return (1.0 - np.clip(cos, -1.0, 1.0)).astype(np.float64)
