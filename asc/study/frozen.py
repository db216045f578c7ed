"""Prepared (frozen) user studies: complete and score the samples once, store them, rebuild the views.

:func:`prepare_study` completes the samples of a :class:`asc.study.StudyDefinition` that have no
completion (greedy, so deterministic) and scores the exact token ids once; :func:`save_frozen` writes
what the views need to a JSON file atomically, with :func:`content_hash` of the definition;
:func:`load_frozen` refuses a file whose hash differs ("prepare again"); :func:`frozen_explanation`
rebuilds a sample's Explanation without a model, so every participant sees identical content.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from asc.atomic import write_atomic
from asc.errors import InputError
from asc.paths import study_dir
from asc.study.definition import StudyDefinition

if TYPE_CHECKING:
    from asc.explain import Explanation
    from asc.models import ModelBundle

__all__ = ["FrozenSample", "FrozenStudy", "content_hash", "frozen_explanation", "frozen_path",
           "load_frozen", "prepare_study", "save_frozen"]

FROZEN_FORMAT = 1


def frozen_path(definition: StudyDefinition, folder: str | Path | None = None) -> Path:
    """The conventional frozen file of a study: ``<folder or asc.paths.study_dir()>/<id>.frozen.json``."""
    return Path(folder or study_dir()) / f"{definition.id}.frozen.json"


def content_hash(definition: StudyDefinition) -> str:
    """SHA-256 of what the frozen content depends on: id, model, language and the samples."""
    payload = {"id": definition.id, "model": definition.model, "language": definition.language,
               "samples": [asdict(s) for s in definition.samples]}
    return hashlib.sha256(json.dumps(payload, sort_keys=True, ensure_ascii=True).encode()).hexdigest()


# ---------------------------------------------------------------- preparation and frozen files


@dataclass(frozen=True, eq=False)
class FrozenSample:
    """One sample as every participant sees it: prompt + completion and the scores of its exact ids."""

    id: str
    prompt: str
    completion: str
    generated: bool  # True: the model wrote the completion at preparation; False: given in the file
    stop_reason: str | None  # complete()'s stop reason when generated
    n_prompt: int  # the first n_prompt tokens come from the prompt
    scores: Any  # asc.scores.TokenScores of prompt + completion
    model: dict  # {name, layers, parameters}
    language: str = "python"
    aggregate: str = "median"

    @property
    def text(self) -> str:
        return self.prompt + self.completion


@dataclass(frozen=True, eq=False)
class FrozenStudy:
    study_id: str
    definition_hash: str
    model: dict
    prepared_at: str
    samples: tuple[FrozenSample, ...]

    def sample(self, sample_id: str) -> FrozenSample:
        for s in self.samples:
            if s.id == sample_id:
                return s
        raise InputError(f"sample {sample_id!r} is not in the prepared study {self.study_id!r}")


def _common_prefix(a, b) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def prepare_study(definition: StudyDefinition, bundle: ModelBundle | None = None) -> FrozenStudy:
    """Complete (when no completion is given) and score every sample once; ``bundle`` defaults to
    ``load_model(definition.model)``."""
    from asc.generate import complete
    from asc.models import load_model
    from asc.scores import encode, score_ids

    bundle = bundle if bundle is not None else load_model(definition.model)
    info = bundle.summary()
    frozen = []
    for i, s in enumerate(definition.samples):
        try:
            if s.completion is None:
                comp = complete(bundle, s.prompt, max_new_tokens=s.max_new_tokens, language=definition.language)
                prompt, completion, stop = comp.prompt, comp.completion, comp.stop_reason
                ids, start, end, special, n_prompt = comp.ids, comp.start, comp.end, comp.special, comp.n_prompt
            else:
                prompt, completion, stop = s.prompt, s.completion, None
                ids, start, end, special = encode(bundle, prompt + completion)
                n_prompt = _common_prefix(encode(bundle, prompt)[0].tolist(), ids.tolist())
            scores = score_ids(bundle, prompt + completion, ids, start, end, special)
        except InputError as err:
            raise InputError(f"samples[{i}] ({s.id}): {err}") from None
        frozen.append(FrozenSample(s.id, prompt, completion, s.completion is None, stop, int(n_prompt), scores, info,
                                   definition.language, definition.aggregate))
    return FrozenStudy(definition.id, content_hash(definition), info,
                       datetime.now(UTC).isoformat(timespec="seconds"), tuple(frozen))


def _floats(a: np.ndarray) -> list:
    return [_floats(r) for r in a] if a.ndim > 1 else [None if math.isnan(x) else x for x in a.tolist()]


def _scores_json(s) -> dict:
    return {"ids": s.ids.tolist(), "start": s.start.tolist(), "end": s.end.tolist(), "special": s.special.tolist(),
            "prob": _floats(s.prob), "logprob": _floats(s.logprob), "entropy": _floats(s.entropy),
            "rank": s.rank.tolist(), "top_k": int(s.top_ids.shape[1]), "top_ids": s.top_ids.tolist(),
            "top_probs": _floats(s.top_probs), "top_text": [list(r) for r in s.top_text], "n_windows": s.n_windows}


def _scores_from(d: dict, source: str):
    from asc.scores import TokenScores

    k = d["top_k"]
    return TokenScores(
        source=source, ids=np.asarray(d["ids"], np.int64), start=np.asarray(d["start"], np.int64),
        end=np.asarray(d["end"], np.int64), special=np.asarray(d["special"], bool),
        prob=np.asarray(d["prob"], float), logprob=np.asarray(d["logprob"], float),
        entropy=np.asarray(d["entropy"], float), rank=np.asarray(d["rank"], np.int64),
        top_ids=np.asarray(d["top_ids"], np.int64).reshape(-1, k),
        top_probs=np.asarray(d["top_probs"], float).reshape(-1, k),
        top_text=tuple(tuple(r) for r in d["top_text"]), n_windows=int(d["n_windows"]))


def save_frozen(frozen: FrozenStudy, path: str | Path) -> Path:
    """Write the prepared study as JSON, atomically (a reader sees the old file or the new one)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    doc = {"format": FROZEN_FORMAT, "study_id": frozen.study_id, "definition_hash": frozen.definition_hash,
           "model": frozen.model, "prepared_at": frozen.prepared_at,
           "samples": [{"id": s.id, "prompt": s.prompt, "completion": s.completion, "generated": s.generated,
                        "stop_reason": s.stop_reason, "n_prompt": s.n_prompt, "scores": _scores_json(s.scores)}
                       for s in frozen.samples]}
    return write_atomic(path, lambda tmp: tmp.write_text(json.dumps(doc, ensure_ascii=False, allow_nan=False),
                                                          encoding="utf-8"))


def load_frozen(path: str | Path, definition: StudyDefinition) -> FrozenStudy:
    """Read a frozen study; refuses one prepared from another definition (then prepare again)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"{path}: no prepared study: prepare it first (python -m asc.study prepare)") from None
    except (OSError, ValueError) as err:
        raise InputError(f"{path.name}: not a readable prepared study ({err}): prepare it again") from None
    except RecursionError:
        raise InputError(f"{path.name}: not a readable prepared study (nested too deeply): prepare it again") from None
    if not isinstance(doc, dict) or doc.get("format") != FROZEN_FORMAT:
        raise InputError(f"{path.name}: not a prepared study of format {FROZEN_FORMAT}: prepare it again")
    if doc.get("study_id") != definition.id or doc.get("definition_hash") != content_hash(definition):
        raise InputError(f"{path.name} was prepared from another version of study {definition.id!r} (its samples, "
                         "model or language changed): prepare the study again")
    try:
        samples = tuple(FrozenSample(s["id"], s["prompt"], s["completion"], bool(s["generated"]), s["stop_reason"],
                                     int(s["n_prompt"]), _scores_from(s["scores"], s["prompt"] + s["completion"]),
                                     doc["model"], definition.language, definition.aggregate)
                        for s in doc["samples"])
        return FrozenStudy(doc["study_id"], doc["definition_hash"], doc["model"], doc["prepared_at"], samples)
    except (KeyError, TypeError, ValueError, IndexError, AttributeError, OverflowError) as err:
        # a hand-edited or damaged file: a field missing, of the wrong type, or a number out of range
        raise InputError(f"{path.name}: damaged prepared study ({err!r}): prepare it again") from None


def frozen_explanation(sample: FrozenSample) -> tuple[Explanation, int]:
    """``(Explanation, n_prompt)`` of a frozen sample, rebuilt from its stored scores without a model."""
    from asc.explain import explain_scored

    return explain_scored(sample.model, sample.scores, sample.language, sample.aggregate), sample.n_prompt
