"""Syntax features: sparse autoencoders on the residual stream, read through the AST.

Which SAE latents does a code model use for each syntax concept, and which fire on this node?

- :class:`SparseAutoencoder` and its folder in SAELens's layout (:func:`save_sae`, :func:`load_sae`; ``cfg.json`` +
  ``sae_weights.safetensors``), checked against a model and layer (:func:`check_sae_for`, :class:`SaeMismatchError`);
- :func:`train_sae`: a TopK SAE on block L's output, streamed from a corpus, resumable (:class:`TrainSettings`);
- :func:`evaluate_sae`: variance explained, L0, dead latents, CE loss recovered (:class:`SaeQuality`);
- :func:`corpus_activations` binds each token's latents to its syntax node and category, :func:`enrich` gives every
  latent's firing rate, mean activation and selectivity per category and node type (:class:`Enrichment`);
- :func:`latent_card` / :func:`render_card`: one latent's offline dashboard; :func:`features`: the strongest latents
  of every node of an :class:`asc.Explanation` (:class:`NodeFeatures`).

CLI: ``python -m probes sae {train,eval,enrich,show}``.
"""

from probes.sae.corpus import CorpusActivations, corpus_activations
from probes.sae.dashboard import NodeFeatures, features, latent_card, render_card
from probes.sae.enrichment import Enrichment, enrich
from probes.sae.model import SaeConfig, SaeMismatchError, SparseAutoencoder, check_sae_for, load_sae, save_sae
from probes.sae.quality import SaeQuality, evaluate_sae
from probes.sae.train import TrainResult, TrainSettings, train_sae

__all__ = [
    "CorpusActivations", "Enrichment", "NodeFeatures", "SaeConfig", "SaeMismatchError", "SaeQuality",
    "SparseAutoencoder", "TrainResult", "TrainSettings",
    "check_sae_for", "corpus_activations", "enrich", "evaluate_sae", "features", "latent_card", "load_sae",
    "render_card", "save_sae", "train_sae",
]
