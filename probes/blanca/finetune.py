"""Fine-tuning a sentence-transformers encoder on BLANCA task items, as the BLANCA paper does (Abdelaziz et al.,
2021, sections 4.1-4.6), single-task ("FT-R") or multi-task ("RFLHU", "HU").

Each task becomes pairs of texts with a label (:func:`training_pairs`, ``split == "train"`` items only):

- **R** (question, answer, score): the answer's grade min-max scaled within its question, 0 for the worst and 1 for
  the best (the paper converted popularity ranks to scores between 0 and 1); a question whose grades are all equal
  carries no order and is left out. Loss: SBERT's ``CosineSimilarityLoss`` (MSE between the pair's cosine
  similarity and the score), the paper's STSB-style set-up.
- **L**, **F** (text_a, text_b, 1 or 0): positive or not; loss ``ContrastiveLoss`` (SBERT defaults: cosine
  distance, margin 0.5), as in the paper's classification set-up.
- **H**, **U** (text_a, text_b, score) with 1 = most related: a distance ``d`` becomes
  ``1 - (d - dmin) / (dmax - dmin)`` over the task's train items (H's MRO distance 1 -> 1, the largest -> 0; all
  equal -> 1); a similarity is kept, clipped to [0, 1]. Loss ``CosineSimilarityLoss``, as the paper did for H and U.

Multi-task training goes round-robin over the tasks' shuffled batches, each task with its own loss, as SBERT's
multi-objective ``fit`` did, but one epoch runs as many rounds as the *largest* task has batches (smaller tasks are
reshuffled and cycled) where SBERT stopped at the smallest, and one AdamW optimizer (weight decay 0.01, none on
biases and LayerNorm) steps after every batch, with a linear warm-up over 10% of the steps, then linear decay, and
gradients clipped at norm 1. The loop is plain torch (no ``model.fit`` or trainer, which need ``datasets``).

Departures from the paper: it fine-tuned BERTOverflow and CodeBERT for 10 epochs on up to 450k pairs per task, with
10% of the training data held out for an SBERT evaluator; we fine-tune an embedded MiniLM (or any local
sentence-transformers folder) for minutes on a CPU, on at most ``max_pairs`` pairs per task (a seeded subsample
that keeps L/F's class shares), with no validation split and no evaluator (the test split is what the probes
measure afterwards). R scales grades, where the paper kept one answer per tied rank and scaled the ranks.

:func:`finetune` saves a real sentence-transformers folder (``config.json`` at its root, so transformers' and
:func:`asc.models.load_model` read it too) plus ``blanca-finetune.json``: the base folder and its weights' SHA-256,
tasks, pairs, losses, loss settings, hyperparameters, seconds, library versions, a digest of the train items and
one of the whole recipe (items, base weights, targets, hyperparameters; not the device). It trains into a hidden
sibling folder renamed into place at the end, so ``out`` is complete or absent; a rerun with the same recipe
returns the saved fine-tune without training, one with another recipe is refused.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import random
import shutil
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asc import device as device_mod
from asc.atomic import write_atomic
from asc.errors import InputError
from asc.extras import require
from asc.models import EMBEDDED
from probes.blanca.items import BLANCA_TASKS, BlancaItem, PairItem, RankItem, ScoredPairItem, target_kind

__all__ = ["FINETUNE_MANIFEST", "FinetuneResult", "base_folder", "default_finetune_name", "finetune",
           "training_pairs"]

FINETUNE_MANIFEST = "blanca-finetune.json"
_FORMAT, _VERSION = "asc-blanca-finetune", 1
_ORDER = "RFLHU"  # the paper's order in multi-task names
_CONTRASTIVE = ("L", "F")
_WARMUP, _WEIGHT_DECAY, _MAX_GRAD_NORM = 0.1, 0.01, 1.0


@dataclass(frozen=True)
class FinetuneResult:
    """A saved fine-tune: its ``folder``, tasks, pairs and final mean loss per task (the last epoch's), optimizer
    steps, training seconds, the provenance written to ``blanca-finetune.json``, and whether it was ``reused`` (found
    complete in the folder instead of trained)."""

    folder: Path
    tasks: tuple[str, ...]
    pairs: dict[str, int]
    steps: int
    seconds: float
    losses: dict[str, float]
    provenance: dict[str, Any] = field(repr=False)
    reused: bool = False


def base_folder(spec: str | Path) -> Path:
    """The sentence-transformers folder to start from: an embedded encoder's name (``minilm-l6``) or a folder path;
    :class:`InputError` naming the fix when it is not a sentence-transformers folder (no ``modules.json``)."""
    name = str(spec).strip()
    encoders = ", ".join(n for n, e in EMBEDDED.items() if e.kind == "encoder")
    if name in EMBEDDED:
        entry = EMBEDDED[name]
        if entry.kind != "encoder" or entry.locate is None:
            raise InputError(f"{name!r} is a decoder; fine-tuning needs a sentence-transformers encoder: {encoders} "
                             "or a local sentence-transformers folder")
        folder = entry.locate()
    else:
        folder = Path(os.path.expanduser(name))
        if not folder.is_dir():
            raise InputError(f"no folder {folder}: give an embedded encoder ({encoders}) or a local "
                             "sentence-transformers folder")
    if not (folder / "modules.json").is_file():
        raise InputError(f"{folder} is not a sentence-transformers folder (no modules.json): give {encoders}, a "
                         "folder written by SentenceTransformer.save() or an earlier fine-tune")
    return folder


def default_finetune_name(tasks: Sequence[str]) -> str:
    """The paper's names: ``FT-R`` for one task, the tasks in RFLHU order for several (``HU``, ``RFLHU``)."""
    chosen = _ordered(tasks)
    return f"FT-{chosen[0]}" if len(chosen) == 1 else "".join(chosen)


def _ordered(tasks: Sequence[str] | Mapping[str, Any]) -> tuple[str, ...]:
    unknown = sorted(set(tasks) - set(BLANCA_TASKS))
    if unknown or not tasks:
        raise InputError(f"tasks {', '.join(unknown) or '(none)'}: choose one or more of {', '.join(BLANCA_TASKS)}")
    return tuple(t for t in _ORDER if t in tasks)


def _scaled(values: Sequence[float], flip: bool) -> list[float]:
    low, high = min(values), max(values)
    unit = [1.0 if high == low else (v - low) / (high - low) for v in values]
    return [1.0 - u if flip and high != low else u for u in unit]


def _subsample(pairs: list[tuple[str, str, float]], max_pairs: int, rng: random.Random,
               stratify: bool) -> list[tuple[str, str, float]]:
    """``max_pairs`` of ``pairs`` (order kept); with ``stratify`` each label keeps its share (largest remainder)."""
    groups: dict[float, list[int]] = {}
    for i, pair in enumerate(pairs):
        groups.setdefault(pair[2] if stratify else 0.0, []).append(i)
    exact = {k: max_pairs * len(v) / len(pairs) for k, v in groups.items()}
    quota = {k: int(q) for k, q in exact.items()}
    for k in sorted(groups, key=lambda k: quota[k] - exact[k])[:max_pairs - sum(quota.values())]:
        quota[k] += 1
    keep = sorted(i for k, idx in sorted(groups.items()) for i in rng.sample(idx, quota[k]))
    return [pairs[i] for i in keep]


def training_pairs(task: str, items: Sequence[BlancaItem], target: str | None = None, max_pairs: int | None = None,
                   seed: int = 0) -> list[tuple[str, str, float]]:
    """``(text_a, text_b, label)`` for the task's train items (module doc: scores in [0, 1], 1 = most related; L/F
    labels 1.0/0.0). ``target`` says whether H/U targets are a ``distance`` or a ``similarity`` (default: the
    task's, see :func:`probes.blanca.items.target_kind`). At most ``max_pairs``, a seeded subsample."""
    _ordered([task])
    kind = RankItem if task == "R" else PairItem if task in _CONTRASTIVE else ScoredPairItem
    wrong = [i.id for i in items if not isinstance(i, kind) or i.task != task]
    if wrong:
        raise InputError(f"items {', '.join(wrong[:3])} are not {task} items; give each task its own items")
    train = [i for i in items if i.split == "train"]
    if not train:
        raise InputError(f"task {task} has no items with split 'train'; fine-tuning uses train items only "
                         "(the test split is for evaluation)")
    pairs: list[tuple[str, str, float]] = []
    if task == "R":
        for item in train:
            if isinstance(item, RankItem) and len(set(item.grades)) > 1:
                pairs += zip([item.question] * len(item.answers), item.answers, _scaled(item.grades, False),
                             strict=True)
        if not pairs:
            raise InputError("task R: every train question has answers of equal grade; no order to learn from")
    elif task in _CONTRASTIVE:
        pairs = [(i.text_a, i.text_b, 1.0 if i.positive else 0.0) for i in train if isinstance(i, PairItem)]
    else:
        kind_of = target or target_kind({"task": task})
        if kind_of not in ("distance", "similarity"):
            raise InputError(f"target {kind_of!r} for task {task}: choose distance or similarity")
        scored = [i for i in train if isinstance(i, ScoredPairItem)]
        values = ([min(max(i.target, 0.0), 1.0) for i in scored] if kind_of == "similarity"
                  else _scaled([i.target for i in scored], True))
        pairs = [(i.text_a, i.text_b, v) for i, v in zip(scored, values, strict=True)]
    if max_pairs is not None and max_pairs < 1:
        raise InputError(f"max_pairs must be at least 1 (got {max_pairs}); leave it out to use every pair")
    if max_pairs is not None and len(pairs) > max_pairs:
        pairs = _subsample(pairs, max_pairs, random.Random(f"{seed}:{task}"), task in _CONTRASTIVE)
    return pairs


def _sha256(paths: Sequence[Path]) -> str:
    digest = hashlib.sha256()
    for path in paths:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _weights(folder: Path) -> list[Path]:
    files = sorted(folder.glob("*.safetensors")) or sorted(folder.glob("*.bin"))
    if not files:
        raise InputError(f"{folder} holds no weights (*.safetensors or *.bin at its root); save the model again")
    return files


def _items_digest(items_by_task: Mapping[str, Sequence[BlancaItem]]) -> str:
    """SHA-256 of the train items' ids and contents (texts, answers, grades, labels, targets, names)."""
    rows = {task: [[i.id, *(json.dumps(getattr(i, k), ensure_ascii=False) for k in sorted(
        type(i).__dataclass_fields__) if k not in ("id", "split", "meta"))] for i in items if i.split == "train"]
        for task, items in sorted(items_by_task.items())}
    return hashlib.sha256(json.dumps(rows, ensure_ascii=False).encode("utf-8")).hexdigest()


def _reuse(out: Path, digest: str) -> FinetuneResult | None:
    """The fine-tune already in ``out`` when it was made from the same inputs; None when ``out`` is absent or an
    empty folder; :class:`InputError` when it holds something else."""
    manifest = out / FINETUNE_MANIFEST
    if manifest.is_file():
        try:
            prov = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
            raise InputError(f"{manifest} cannot be read ({err}): pick another --out or delete {out}") from None
        if prov.get("digest") == digest:
            return FinetuneResult(out, tuple(prov["tasks"]), dict(prov["pairs"]), int(prov["steps"]),
                                  float(prov["seconds"]), dict(prov["losses"]), prov, reused=True)
        raise InputError(f"{out} holds a fine-tune of other inputs ({prov.get('name')}, other items, base or "
                         "settings): pick another --out or delete that folder")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InputError(f"{out} exists and is not a BLANCA fine-tune: pick another --out or delete it")
    return None


def _batches(n: int, size: int, rng: random.Random) -> list[list[int]]:
    order = list(range(n))
    rng.shuffle(order)
    return [order[i:i + size] for i in range(0, n, size)]


def finetune(base: str | Path, items_by_task: Mapping[str, Sequence[BlancaItem]], out: str | Path, *,
             targets: Mapping[str, str] | None = None, epochs: int = 1, batch_size: int = 16,
             max_pairs: int | None = 2000, max_seq_length: int = 128, learning_rate: float = 2e-5, seed: int = 0,
             device: str = "cpu", on_progress: Callable[[int, int], None] | None = None,
             should_stop: Callable[[], bool] | None = None) -> FinetuneResult:
    """Fine-tune ``base`` (see :func:`base_folder`) on the train items of each task in ``items_by_task`` and save
    it to ``out`` (module doc). ``targets`` gives H/U's target kind when not the task's default. Seeded: the same
    inputs give the same weights on the same device. ``on_progress(step, total)`` follows the optimizer steps;
    ``should_stop()`` true raises :class:`InterruptedError` and leaves nothing behind."""
    if epochs < 1 or batch_size < 1 or max_seq_length < 8 or not learning_rate > 0:
        raise InputError("epochs and batch_size must be at least 1, max_seq_length at least 8, learning_rate > 0")
    require("sentence_transformers", extra="probes", feature="BLANCA's fine-tuning (sentence-transformers)")
    folder, tasks, out = base_folder(base), _ordered(items_by_task), Path(out)
    kinds = {t: (targets or {}).get(t) or target_kind({"task": t}) for t in tasks if t in ("H", "U")}
    data = {t: training_pairs(t, items_by_task[t], kinds.get(t), max_pairs, seed) for t in tasks}
    torch_dev = device_mod.resolve(device, "float32")[0]
    hyper = {"epochs": epochs, "batch_size": batch_size, "max_pairs": max_pairs, "max_seq_length": max_seq_length,
             "learning_rate": learning_rate, "seed": seed, "optimizer": "AdamW", "weight_decay": _WEIGHT_DECAY,
             "warmup_ratio": _WARMUP, "schedule": "linear warm-up then linear decay", "max_grad_norm": _MAX_GRAD_NORM}
    weights = _weights(folder)
    recipe = {"base_sha256": _sha256(weights), "items": _items_digest({t: items_by_task[t] for t in tasks}),
              "targets": kinds, "hyperparameters": hyper}
    digest = hashlib.sha256(json.dumps(recipe, sort_keys=True).encode("utf-8")).hexdigest()
    found = _reuse(out, digest)
    if found is not None:
        return found
    tmp = out.with_name(f".{out.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        prov = _train(folder, data, tmp, torch_dev, hyper, on_progress, should_stop)
        prov.update(format=_FORMAT, version=_VERSION, name=default_finetune_name(tasks), digest=digest,
                    items_digest=recipe["items"], targets=kinds, device=str(torch_dev), hyperparameters=hyper,
                    base={"spec": str(base), "folder": str(folder), "weights": [w.name for w in weights],
                          "sha256": recipe["base_sha256"]})
        write_atomic(tmp / FINETUNE_MANIFEST, lambda p: p.write_text(json.dumps(prov, indent=2), encoding="utf-8"))
        if out.is_dir():
            out.rmdir()  # empty (checked by _reuse): the rename needs the name free
        os.replace(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return FinetuneResult(out, tasks, dict(prov["pairs"]), prov["steps"], prov["seconds"], dict(prov["losses"]),
                          prov)


def _train(folder: Path, data: dict[str, list[tuple[str, str, float]]], tmp: Path, torch_dev: Any,
           hyper: dict[str, Any], on_progress: Callable[[int, int], None] | None,
           should_stop: Callable[[], bool] | None) -> dict[str, Any]:
    """Train (module doc) and save the model into ``tmp``; the provenance of the run."""
    import sentence_transformers
    import torch
    import transformers
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.losses import ContrastiveLoss, CosineSimilarityLoss

    started = time.perf_counter()
    seed, size = hyper["seed"], hyper["batch_size"]
    devices = [torch_dev.index or 0] if torch_dev.type == "cuda" else []
    with torch.random.fork_rng(devices=devices):  # seeded dropout without touching the caller's generators
        torch.manual_seed(seed)
        model = SentenceTransformer(str(folder), device=str(torch_dev))
        model.max_seq_length = hyper["max_seq_length"]
        losses = {t: (ContrastiveLoss if t in _CONTRASTIVE else CosineSimilarityLoss)(model) for t in data}
        rounds = max(-(-len(p) // size) for p in data.values())
        total = hyper["epochs"] * rounds * len(data)
        no_decay = ("bias", "LayerNorm.weight", "LayerNorm.bias")
        named = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
        optimizer = torch.optim.AdamW(
            [{"params": [p for n, p in named if not n.endswith(no_decay)], "weight_decay": _WEIGHT_DECAY},
             {"params": [p for n, p in named if n.endswith(no_decay)], "weight_decay": 0.0}], lr=hyper["learning_rate"])
        warmup = max(1, int(total * _WARMUP))
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lambda s: (s + 1) / warmup if s < warmup else max(0.0, (total - s) / max(1, total - warmup)))
        rngs = {t: random.Random(f"{seed}:{t}:batches") for t in data}
        queues: dict[str, list[list[int]]] = {t: [] for t in data}
        history: dict[str, list[float]] = {t: [] for t in data}
        model.train()
        step = 0
        for _ in range(hyper["epochs"]):
            sums = dict.fromkeys(data, 0.0)
            for _ in range(rounds):
                for task, pairs in data.items():
                    if should_stop is not None and should_stop():
                        raise InterruptedError("fine-tuning stopped; nothing was saved")
                    if not queues[task]:
                        queues[task] = _batches(len(pairs), size, rngs[task])
                    batch = [pairs[i] for i in queues[task].pop(0)]
                    features = [{k: v.to(torch_dev) if isinstance(v, torch.Tensor) else v
                                 for k, v in model.preprocess([b[c] for b in batch]).items()} for c in (0, 1)]
                    labels = torch.tensor([b[2] for b in batch], dtype=torch.float32, device=torch_dev)
                    loss = losses[task](features, labels)
                    loss.backward()
                    torch.nn.utils.clip_grad_norm_(model.parameters(), _MAX_GRAD_NORM)
                    optimizer.step()
                    scheduler.step()
                    optimizer.zero_grad()
                    sums[task] += float(loss.detach())
                    step += 1
                    if on_progress is not None:
                        on_progress(step, total)
            for task in data:
                history[task].append(sums[task] / rounds)
        model.eval()
        model.save(str(tmp), create_model_card=False)
    return {"tasks": list(data), "pairs": {t: len(p) for t, p in data.items()}, "steps": step,
            "seconds": round(time.perf_counter() - started, 3), "losses": {t: h[-1] for t, h in history.items()},
            "epoch_losses": history, "loss_names": {t: type(fn).__name__ for t, fn in losses.items()},
            "loss_settings": {t: fn.get_config_dict() for t, fn in losses.items()},
            "versions": {"python": platform.python_version(), "torch": torch.__version__,
                         "transformers": transformers.__version__,
                         "sentence_transformers": sentence_transformers.__version__}}
