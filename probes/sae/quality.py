"""How good an SAE is on a corpus: variance explained, L0, dead latents, and the cross-entropy it recovers.

For the usable tokens of each snippet (:func:`probes.sae.activations.usable`: those with a next-token prediction),
with ``x`` block ``L``'s output and ``x_hat`` the SAE's reconstruction:

* **fraction of variance explained**: ``1 - sum ||x - x_hat||^2 / sum ||x - mean(x)||^2``, pooled over every token
  of the corpus (the mean is the corpus's);
* **L0**: the mean number of latents active per token; **dead latents**: those never active on the corpus;
* **CE loss recovered**: the mean next-token cross-entropy (nats) of the clean model, of the model with ``x_hat``
  spliced in for ``x`` at block ``L`` (:func:`probes.sae.activations.splice`), and of the model with ``x`` replaced by
  zeros; recovered = ``(CE_zero - CE_sae) / (CE_zero - CE_clean)`` (1: as good as the clean model, 0: as bad as
  ablating the layer's stream). The cross-entropy is taken at usable tokens, from the logits of the position before.

**Departure.** The splice replaces only the usable positions; special tokens and each snippet's first token (the
attention sink the SAE is not trained on, whose reconstruction would be out of distribution) keep their clean
activations, in the SAE and in the zero-ablated runs alike. SAELens's evaluation splices every position unless told to
exclude special tokens.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

import torch

from asc.arch import log_probs
from probes.sae.activations import EncodedSnippet, encode_snippets, padded, splice, usable
from probes.sae.model import SparseAutoencoder

if TYPE_CHECKING:
    from asc.models import ModelBundle

__all__ = ["SaeQuality", "evaluate_sae", "summary_line"]


@dataclass(frozen=True)
class SaeQuality:
    """The measures of the module doc on ``n_tokens`` usable tokens of ``n_snippets`` snippets."""

    n_snippets: int
    n_tokens: int
    variance_explained: float
    mse: float
    l0: float
    dead_latents: int
    dead_fraction: float
    ce_clean: float
    ce_sae: float
    ce_zero: float
    ce_recovered: float

    def to_dict(self) -> dict[str, Any]:
        """The JSON layout of ``python -m probes sae eval --json``."""
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in asdict(self).items()}


def _ce(bundle: ModelBundle, ids: torch.Tensor, mask: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Summed cross-entropy (nats) at the ``targets`` positions (bool (B, T)) of one forward pass."""
    logits = bundle.model(input_ids=ids, attention_mask=mask, use_cache=False).logits
    lp = log_probs(logits[:, :-1])
    picked = lp.gather(-1, ids[:, 1:, None])[..., 0]
    return -(picked * targets[:, 1:].to(picked.dtype)).sum()


def _batches(snippets: Sequence[EncodedSnippet], budget: int) -> list[list[int]]:
    order = sorted(range(len(snippets)), key=lambda i: snippets[i].n_tokens)
    out: list[list[int]] = []
    for i in order:
        if out and max(snippets[j].n_tokens for j in [*out[-1], i]) * (len(out[-1]) + 1) <= budget:
            out[-1].append(i)
        else:
            out.append([i])
    return out


def _three_runs(bundle: ModelBundle, sae: SparseAutoencoder, layer: int, ids: torch.Tensor, mask: torch.Tensor,
                use: torch.Tensor, ce: dict[str, float]) -> torch.Tensor:
    """Add the clean, SAE-spliced and zero-ablated cross-entropies of one batch to ``ce``; block ``layer``'s clean
    output (B, T, d)."""
    kept: list[torch.Tensor] = []
    device = next(sae.parameters()).device

    def record(h: torch.Tensor) -> torch.Tensor:
        kept.append(h.detach().float())
        return h

    def reconstruct(h: torch.Tensor) -> torch.Tensor:
        return torch.where(use[..., None], sae(h.float().to(device)).to(h.device), h.float())

    def zero(h: torch.Tensor) -> torch.Tensor:
        return torch.where(use[..., None], torch.zeros_like(h), h)

    for name, fn in (("clean", record), ("sae", reconstruct), ("zero", zero)):
        with splice(bundle, layer, fn):
            ce[name] += float(_ce(bundle, ids, mask, use))
    return kept[0]


def evaluate_sae(sae: SparseAutoencoder, bundle: ModelBundle, sources: Sequence[str], layer: int, *,
                 max_tokens: int = 256, budget: int = 512,
                 on_progress: Callable[[int, int], None] | None = None) -> SaeQuality:
    """The measures of the module doc for ``sae`` at block ``layer`` of ``bundle`` on ``sources`` (each truncated to
    ``max_tokens`` tokens; forward passes of at most ``budget`` padded tokens)."""
    snippets = encode_snippets(bundle, sources, max_tokens)
    d, m = sae.cfg.d_in, sae.cfg.d_sae
    sum_x, sum_x2 = torch.zeros(d, dtype=torch.float64), torch.zeros(d, dtype=torch.float64)
    sse, n, active = 0.0, 0, 0
    fired = torch.zeros(m, dtype=torch.bool)
    ce = {"clean": 0.0, "sae": 0.0, "zero": 0.0}
    device = next(sae.parameters()).device
    batches = _batches(snippets, budget)
    for done, group in enumerate(batches, 1):
        rows = [snippets[i] for i in group]
        ids, mask = padded(bundle, [r.ids for r in rows])
        use = torch.zeros(ids.shape, dtype=torch.bool, device=ids.device)
        for r, snip in enumerate(rows):
            use[r, : snip.n_tokens] = torch.from_numpy(usable(snip.special))
        with bundle.lock, torch.inference_mode():
            kept = _three_runs(bundle, sae, layer, ids, mask, use, ce)
            x = kept[use].to(device)
            acts = sae.encode(x)
            recon = sae.decode(acts)
        x64 = x.double().cpu()
        sum_x += x64.sum(0)
        sum_x2 += x64.pow(2).sum(0)
        sse += float((recon - x).double().pow(2).sum())
        n += len(x)
        on = acts > 0
        active += int(on.sum())
        fired |= on.any(0).cpu()
        if on_progress:
            on_progress(done, len(batches))
    sst = float((sum_x2 - sum_x.pow(2) / max(n, 1)).sum())
    clean, spliced, ablated = (ce[k] / max(n, 1) for k in ("clean", "sae", "zero"))
    gap = ablated - clean
    dead = int((~fired).sum())
    return SaeQuality(n_snippets=len(snippets), n_tokens=n, variance_explained=1 - sse / sst if sst > 0 else math.nan,
                      mse=sse / max(n, 1), l0=active / max(n, 1), dead_latents=dead, dead_fraction=dead / m,
                      ce_clean=clean, ce_sae=spliced, ce_zero=ablated,
                      ce_recovered=(ablated - spliced) / gap if abs(gap) > 1e-12 else math.nan)


def summary_line(q: SaeQuality) -> str:
    """One line of the measures (the CLI's text output)."""
    return (f"variance explained {q.variance_explained:.3f}  L0 {q.l0:.1f}  dead {q.dead_latents} "
            f"({q.dead_fraction:.1%})  CE clean {q.ce_clean:.3f} / SAE {q.ce_sae:.3f} / zero {q.ce_zero:.3f}  "
            f"recovered {q.ce_recovered:.3f}  ({q.n_tokens:,} tokens, {q.n_snippets} snippets)")

