"""Syntax features: sparse autoencoders on the residual stream, read through the AST.

Which SAE latents does a code model use for each syntax concept, and which fire on this node?

- :class:`SparseAutoencoder` and its folder in SAELens's layout (:func:`save_sae`, :func:`load_sae`; ``cfg.json`` +
  ``sae_weights.safetensors``), checked against a model and layer (:func:`check_sae_for`, :class:`SaeMismatchError`);
- :func:`train_sae`: a TopK SAE on block L's output, streamed from a corpus, resumable (:class:`TrainSettings`);
- :func:`evaluate_sae`: variance explained, L0, dead latents, CE loss recovered (:class:`SaeQuality`);
- :func:`corpus_activations` binds each token's latents to its syntax node and category, :func:`enrich` gives every
  latent's firing rate, mean activation and selectivity per category and node type (:class:`Enrichment`; its labels
  need :data:`LABEL_MIN_TOKENS` tokens of support);
- :func:`versus_probe`: the best single latent (:func:`best_latent`, a :class:`LatentRule`) against INSPECT's linear
  probe on the same samples, split and layer (:class:`VersusProbe`; :func:`versus_features` from arrays);
- :func:`latent_card` / :func:`render_card`: one latent's offline dashboard; :func:`features`: the strongest latents
  of every node of an :class:`asc.Explanation` (:class:`NodeFeatures`);
- :func:`sae_folders`, :func:`open_report` (:class:`SaeReport`): SAE folders under a runs root, read with their saved
  quality and activations; :func:`sae_job`: the app's job that trains, measures and enriches one;
- figures: :func:`category_heatmap`, :func:`activation_histogram`, :func:`card_html` (a dashboard as HTML).

CLI: ``python -m probes sae {train,eval,enrich,show,versus}``.
"""

from probes.sae.corpus import CorpusActivations, corpus_activations
from probes.sae.dashboard import latent_card, render_card
from probes.sae.enrichment import LABEL_MIN_TOKENS, Enrichment, enrich
from probes.sae.figures import HEATMAP_VALUES, activation_histogram, card_html, category_heatmap
from probes.sae.model import SaeConfig, SaeMismatchError, SparseAutoencoder, check_sae_for, load_sae, save_sae
from probes.sae.nodes import NodeFeatures, features
from probes.sae.quality import SaeQuality, evaluate_sae
from probes.sae.store import (
    QUALITY_FILE,
    SaeReport,
    activation_key,
    activation_path,
    open_report,
    sae_folders,
    sae_job,
    saved_activations,
)
from probes.sae.train import TrainResult, TrainSettings, train_sae
from probes.sae.versus import LatentRule, VersusProbe, best_latent, versus_features, versus_probe

__all__ = [
    "HEATMAP_VALUES", "LABEL_MIN_TOKENS", "QUALITY_FILE",
    "CorpusActivations", "Enrichment", "LatentRule", "NodeFeatures", "SaeConfig", "SaeMismatchError", "SaeQuality",
    "SaeReport", "SparseAutoencoder", "TrainResult", "TrainSettings", "VersusProbe",
    "activation_histogram", "activation_key", "activation_path", "best_latent", "card_html", "category_heatmap",
    "check_sae_for", "corpus_activations", "enrich", "evaluate_sae", "features", "latent_card", "load_sae",
    "open_report", "render_card", "sae_folders", "sae_job", "save_sae", "saved_activations", "train_sae",
    "versus_features", "versus_probe",
]
