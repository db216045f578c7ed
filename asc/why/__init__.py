"""Why this token? Attribution and interventions on the syntax tree (issue 30).

- :mod:`asc.why.corrupt`: corruptions that keep code valid (rename an identifier, swap an operator within
  its class, replace a literal, remove a docstring or comment), each checked to parse with no new ERROR node;
  :mod:`asc.why.choices` lists those a snippet offers.
- :mod:`asc.why.attribute`: what in the prompt a prediction used: gradient x input, integrated gradients
  (Captum) and syntax-aware occlusion, aggregated to AST nodes and categories; :mod:`asc.why.statements`: the same
  per statement (each token counted once), per node's own tokens, and where methods agree.
- :mod:`asc.why.patching`: activation patching, clean residual streams restored inside a corrupted run,
  layer x node.
- :mod:`asc.why.corpus`, :mod:`asc.why.corpus_run`, :mod:`asc.why.matrix`: corpus attribution (k target nodes per
  snippet, mass per source category and AST distance, stored in a run's ``attribution/`` table) and the target x
  source category matrix with snippet-bootstrap intervals.
- :mod:`asc.why.requests`: what the app asks for (:class:`AttributionRequest`, :class:`PatchingRequest`), checked
  and typed before a model runs.

The names below (``__all__``) are the package's facade: the app imports them from ``asc.why``. The functions
``attribute`` and ``corrupt`` share their modules' names, so the package keeps the modules under those names:
call them as ``asc.why.attribute.attribute`` and ``asc.why.corrupt.corrupt``.
"""

from asc.why.attribute import (
    ATTRIBUTION_METHODS,
    AUTO_MAX_STEPS,
    AUTO_STEPS,
    AUTO_TOLERANCE,
    DEFAULT_STEPS,
    Attribution,
)
from asc.why.choices import CorruptionChoice, corruption_choices
from asc.why.corpus import DEFAULT_K, MAX_K
from asc.why.corpus_run import (
    ATTRIBUTE_CORPUS_COMMAND,
    ATTRIBUTION_TABLE,
    attribute_run,
    attribution_job,
    attribution_settings,
    has_attribution,
    load_attribution,
    pending_parts,
)
from asc.why.corrupt import KINDS, Corruption, CorruptionSpec, node_corruptions, parse_spec
from asc.why.effects import Effect, effect
from asc.why.matrix import AttributionMatrix, attribution_matrix, run_matrix
from asc.why.patching import Patching, patch
from asc.why.requests import (
    PATCH_SPANS,
    AttributionRequest,
    PatchingRequest,
    default_target_token,
    explainable_tokens,
)
from asc.why.statements import Agreement, Breakdown, agreement, by_own_tokens, by_statement, summary

__all__ = [
    "ATTRIBUTE_CORPUS_COMMAND", "ATTRIBUTION_METHODS", "ATTRIBUTION_TABLE", "AUTO_MAX_STEPS", "AUTO_STEPS",
    "AUTO_TOLERANCE", "DEFAULT_K", "DEFAULT_STEPS", "KINDS", "MAX_K", "PATCH_SPANS",
    "Agreement", "Attribution", "AttributionMatrix", "AttributionRequest", "Breakdown", "Corruption",
    "CorruptionChoice", "CorruptionSpec", "Effect", "Patching", "PatchingRequest",
    "agreement", "attribute_run", "attribution_job", "attribution_matrix", "attribution_settings", "by_own_tokens",
    "by_statement", "corruption_choices", "default_target_token", "effect", "explainable_tokens", "has_attribution",
    "load_attribution", "node_corruptions", "parse_spec", "patch", "pending_parts", "run_matrix", "summary",
]
