"""Train a TopK sparse autoencoder on the residual stream after one block, resumably, saved in SAELens's layout.

**Library choice** (issue 47, measured on this machine): ``sae-lens`` 6.54.12 would add 38 packages to the
environment (``pip install --dry-run``: transformer-lens, wandb, datasets, nltk, opentelemetry, babe, py2store...)
and trains through TransformerLens's ``HookedTransformer``, which re-implements the model instead of running the
transformers model every other feature of AsC Studio reads through :mod:`asc.arch` (GGUF-dequantized SmolLM2 and
Gemma included); ``dictionary-learning`` 0.1.0 (2025) drives nnsight and writes its own layout. The SAE is small
(two matrices and two biases), so it is trained here in plain torch (~100 lines) and saved in SAELens's folder
layout (:mod:`probes.sae.model`), which SAELens's ``SAE.load_from_disk`` reads: the *format* is the field's, the
training stack is ours.

**What it computes.** The TopK SAE of Gao et al. ("Scaling and evaluating sparse autoencoders", 2024): latents
``topk(ReLU)`` of ``(x - b_dec) @ W_enc + b_enc``, reconstruction ``acts @ W_dec + b_dec``, loss the squared error
normalized by the batch's variance (NMSE) plus ``aux_coef`` (1/32) times AuxK, the error reconstructed by the
``aux_k`` (``d_in / 2``) largest pre-activations of dead latents (not fired for ``dead_tokens`` tokens). Decoder rows
are kept at unit norm (renormalized after each step), ``W_enc`` starts as ``W_dec``'s transpose, ``b_dec`` as the
first batch's mean, Adam with the paper's learning rate ``2e-4 / sqrt(width / 2**14)``. Inputs are scaled so their
mean norm is ``sqrt(d_in)`` (SAELens's ``expected_average_only_in``), and the factor is folded into the weights when
saved (``normalize_activations: "none"``).

**Departures.** ``b_dec`` starts at the mean, not the geometric median; decoder rows are renormalized after the step
instead of projecting their gradient first; ``dead_tokens`` defaults to a tenth of the run (at most the paper's 10M
tokens), since short CPU runs see far fewer tokens. A resumed run restarts its activation stream after the snippets
read when the checkpoint was written (:func:`probes.sae.activations.stream_activations`).

**Folder.** ``cfg.json`` and ``sae_weights.safetensors`` (SAELens), ``provenance.json`` (model and its source,
layer, corpus, tokens, seed, settings, git commit, library versions, time, tokens/s, last loss) and
``checkpoint.pt`` (weights, optimizer, counters and settings; every ``checkpoint_every`` steps and at the end, each
written atomically).
"""

from __future__ import annotations

import json
import math
import platform
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from asc.atomic import write_atomic
from asc.errors import InputError
from probes.sae.activations import stream_activations
from probes.sae.model import CFG_FILE, SaeConfig, SparseAutoencoder, hook_name, load_sae, save_sae

if TYPE_CHECKING:
    from asc.models import ModelBundle

__all__ = ["CHECKPOINT_FILE", "PROVENANCE_FILE", "TrainResult", "TrainSettings", "default_lr", "train_sae"]

CHECKPOINT_FILE = "checkpoint.pt"
PROVENANCE_FILE = "provenance.json"
_SAME = ("model", "layer", "corpus", "width", "k", "seed", "batch_size", "lr", "max_tokens", "buffer_tokens")


def default_lr(width: int) -> float:
    """Gao et al.'s learning rate for ``width`` latents: ``2e-4 / sqrt(width / 2**14)``."""
    return 2e-4 / math.sqrt(width / 2**14)


@dataclass(frozen=True)
class TrainSettings:
    """One training run (module doc). ``lr`` 0: :func:`default_lr`; ``dead_tokens`` 0: a tenth of ``tokens``."""

    model: str
    layer: int
    corpus: str
    tokens: int
    width: int
    k: int
    seed: int = 0
    batch_size: int = 1024
    lr: float = 0.0
    aux_coef: float = 1 / 32
    dead_tokens: int = 0
    max_tokens: int = 256
    buffer_tokens: int = 16384
    checkpoint_every: int = 50

    def resolved(self) -> TrainSettings:
        """The settings with the defaults that depend on others filled in."""
        return replace(self, lr=self.lr or default_lr(self.width),
                       dead_tokens=self.dead_tokens or max(self.batch_size, min(10_000_000, self.tokens // 10)))


@dataclass(frozen=True)
class TrainResult:
    """Where the SAE went, how many steps and tokens it saw, the last loss (NMSE + aux) and the time of this call."""

    folder: Path
    steps: int
    tokens: int
    loss: float
    seconds: float
    resumed: bool


def _commit() -> dict[str, Any]:
    """The checkout's git commit and whether it had changes ('' and None outside a checkout)."""
    root = Path(__file__).resolve().parents[2]
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=10, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10, check=True).stdout.strip() != ""
    except (OSError, subprocess.SubprocessError):
        return {"commit": "", "dirty": None}
    return {"commit": head, "dirty": dirty}


def _versions() -> dict[str, str]:
    import importlib.metadata

    out = {"python": platform.python_version()}
    for name in ("torch", "transformers", "numpy", "safetensors", "asc-studio"):
        try:
            out[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            out[name] = ""
    return out


def _initial(settings: TrainSettings, first: torch.Tensor) -> SparseAutoencoder:
    d = first.shape[1]
    cfg = SaeConfig(d_in=d, d_sae=settings.width, architecture="topk", k=settings.k, model_name=settings.model,
                    hook_name=hook_name(settings.layer))
    sae = SparseAutoencoder(cfg)
    gen = torch.Generator().manual_seed(settings.seed)
    w = torch.randn(settings.width, d, generator=gen)
    with torch.no_grad():
        sae.W_dec.copy_(w / w.norm(dim=1, keepdim=True))
        sae.W_enc.copy_(sae.W_dec.T)
        sae.b_dec.copy_(first.mean(0))
    return sae


def _step(sae: SparseAutoencoder, x: torch.Tensor, dead: torch.Tensor, settings: TrainSettings,
          opt: torch.optim.Optimizer) -> tuple[float, torch.Tensor]:
    """One Adam step on batch ``x``; the loss and which latents fired."""
    pre = sae.pre_activations(x)
    acts = sae.activate(pre)
    recon = sae.decode(acts)
    var = (x - x.mean(0)).pow(2).sum(-1).mean().clamp(min=1e-8)
    loss = (recon - x).pow(2).sum(-1).mean() / var
    n_dead = int(dead.sum())
    if n_dead:
        aux_k = min(n_dead, max(1, x.shape[1] // 2))
        masked = pre.masked_fill(~dead, float("-inf"))
        values, index = torch.topk(masked, aux_k, dim=-1)
        aux_acts = torch.zeros_like(pre).scatter_(-1, index, values.relu())
        error = (x - recon).detach()
        loss = loss + settings.aux_coef * (aux_acts @ sae.W_dec - error).pow(2).sum(-1).mean() / var
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    with torch.no_grad():
        sae.W_dec.div_(sae.W_dec.norm(dim=1, keepdim=True).clamp(min=1e-8))
    return float(loss.detach()), (acts > 0).any(0)


def _folded(sae: SparseAutoencoder, scale: float) -> SparseAutoencoder:
    """A copy whose weights take the unscaled activations (SAELens's fold_activation_norm_scaling_factor)."""
    out = SparseAutoencoder(sae.cfg, sae.weights())
    with torch.no_grad():
        out.W_enc.mul_(scale)
        out.W_dec.div_(scale)
        out.b_dec.div_(scale)
    return out


def _check_resume(saved: dict[str, Any], settings: TrainSettings, out: Path) -> None:
    differ = [f"{k}={saved.get(k)!r} (now {getattr(settings, k)!r})" for k in _SAME if saved.get(k) != getattr(settings, k)]
    if differ:
        raise InputError(f"{out} holds a run with other settings: {', '.join(differ)}; give another --out, or the "
                         "same settings to resume it")


def train_sae(bundle: ModelBundle, sources: list[str], settings: TrainSettings, out: str | Path, *,
              on_progress: Callable[[int, int, float], None] | None = None,
              should_stop: Callable[[], bool] | None = None) -> TrainResult:
    """Train (or resume) the SAE of ``settings`` on block ``settings.layer``'s output for ``sources`` into ``out``
    (module doc). ``on_progress(tokens_done, tokens_total, loss)`` after each step; ``should_stop()`` ends the run
    early with a checkpoint (the SAE is saved as it is)."""
    settings = settings.resolved()
    out = Path(out)
    if not sources:
        raise InputError("no snippet to train on: give a corpus with some code")
    ckpt_path = out / CHECKPOINT_FILE
    state: dict[str, Any] | None = None
    if ckpt_path.is_file():
        try:  # weights_only: a checkpoint is data we may not have written; never unpickle code from it
            state = torch.load(ckpt_path, map_location="cpu", weights_only=True)
        except Exception as err:  # noqa: BLE001 (torch raises several kinds for a file it will not read)
            raise InputError(f"{ckpt_path} is not a checkpoint this trainer wrote ({type(err).__name__}): delete it "
                             "to train from the start, or give another --out") from None
        _check_resume(state["settings"], settings, out)
    elif (out / CFG_FILE).exists():
        raise InputError(f"{out} holds an SAE without a checkpoint: give another --out")
    torch.manual_seed(settings.seed)
    t0 = time.perf_counter()
    started = time.strftime("%Y-%m-%dT%H:%M:%S")
    steps, done, read, scale, loss = 0, 0, 0, 0.0, math.nan
    sae: SparseAutoencoder | None = None
    opt: torch.optim.Optimizer | None = None
    since = torch.zeros(settings.width)
    if state is not None:
        steps, done, read, scale, loss = state["steps"], state["tokens"], state["read"], state["scale"], state["loss"]
        sae = SparseAutoencoder(SaeConfig(**{**state["cfg"], "metadata": {}}), state["weights"])
        opt = torch.optim.Adam(sae.parameters(), lr=settings.lr)
        opt.load_state_dict(state["optimizer"])
        since = state["since"]
        started = state.get("started", started)

    def checkpoint() -> None:
        assert sae is not None and opt is not None
        cfg = asdict(sae.cfg)
        cfg.pop("metadata")
        saved = {"settings": asdict(settings), "steps": steps, "tokens": done, "read": read, "scale": scale,
                 "loss": loss, "cfg": cfg, "weights": sae.weights(), "optimizer": opt.state_dict(), "since": since,
                 "started": started}
        write_atomic(ckpt_path, lambda tmp: torch.save(saved, tmp))

    if state is not None and done >= settings.tokens and (out / CFG_FILE).exists():
        return TrainResult(out, steps, done, loss, 0.0, True)  # finished already: nothing to do
    stream = stream_activations(bundle, settings.layer, sources, batch_size=settings.batch_size,
                                buffer_tokens=settings.buffer_tokens, seed=settings.seed + steps, start=read,
                                max_tokens=settings.max_tokens)
    resumed = state is not None
    stopped = False
    first_done = done
    while done < settings.tokens:
        batch, read = next(stream)
        if sae is None:
            scale = math.sqrt(batch.shape[1]) / float(batch.norm(dim=1).mean().clamp(min=1e-8))
            sae = _initial(settings, batch * scale)
            opt = torch.optim.Adam(sae.parameters(), lr=settings.lr)
        assert opt is not None
        loss, fired = _step(sae, batch * scale, since > settings.dead_tokens, settings, opt)
        since = torch.where(fired, torch.zeros_like(since), since + len(batch))
        steps += 1
        done += len(batch)
        if on_progress:
            on_progress(min(done, settings.tokens), settings.tokens, loss)
        if steps % settings.checkpoint_every == 0:
            checkpoint()
        if should_stop and should_stop():
            stopped = True
            break
    assert sae is not None  # tokens >= 1: at least one step ran, or the checkpoint held the SAE
    checkpoint()
    seconds = time.perf_counter() - t0
    _save(bundle, sae, scale, settings, out, steps=steps, done=done, loss=loss, seconds=seconds,
          started=started, complete=not stopped, dead=int((since > settings.dead_tokens).sum()),
          n_snippets=len(sources), speed=(done - first_done) / max(seconds, 1e-9))
    return TrainResult(out, steps, done, loss, seconds, resumed)


def _save(bundle: ModelBundle, sae: SparseAutoencoder, scale: float, settings: TrainSettings, out: Path, *,
          steps: int, done: int, loss: float, seconds: float, started: str, complete: bool, dead: int,
          n_snippets: int, speed: float) -> None:
    folded = _folded(sae, scale)
    folded.cfg = replace(sae.cfg, metadata={
        "prepend_bos": bool(getattr(bundle, "adds_bos", False)), "context_size": settings.max_tokens,
        "dataset_path": settings.corpus, "exclude_special_tokens": True, "trained_by": "asc-studio probes.sae",
        "hook_head_index": None})
    save_sae(folded, out)
    provenance = {
        "model": bundle.name, "model_source": str(bundle.source), "layer": settings.layer,
        "hook_name": sae.cfg.hook_name, "corpus": settings.corpus, "n_snippets": n_snippets, "tokens": done,
        "tokens_requested": settings.tokens, "steps": steps, "complete": complete, "seed": settings.seed,
        "settings": asdict(settings), "scale_folded": scale, "last_loss": loss, "dead_latents": dead,
        "seconds_this_call": round(seconds, 1), "tokens_per_second_this_call": round(speed, 1), "started": started,
        "finished": time.strftime("%Y-%m-%dT%H:%M:%S"), **_commit(), "versions": _versions(),
    }
    text = json.dumps(provenance, indent=1, default=str)
    write_atomic(out / PROVENANCE_FILE, lambda tmp: tmp.write_text(text, encoding="utf-8"))
    load_sae(out)  # what was written reads back (a failure here is a bug, not a user mistake)

