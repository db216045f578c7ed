"""The inspector's per-layer section (AsC-Eval per layer through the logit lens): widgets and calls into ``asc``.

:func:`load` is the toggle and the cached computation (:func:`ui.cache.cached_explain_layers`); :func:`layer_slider`
picks a layer and returns that layer's :class:`~asc.explain.Explanation` (``LayerExplanation.at``), which the
page's sequence view and trees draw unchanged; :func:`panels` shows the category x layer heatmap, the selected
node's curve across layers and their exports. Moving the slider or clicking a node never runs the model.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import streamlit as st

from asc import CONFIDENCE_LINE, AscError, Explanation, InputError, LayerExplanation, csv_text
from asc.viz import category_layer_heatmap, figure_html, node_layer_curve
from ui import cache
from ui.results import InspectorResult
from ui.widgets import Settings

LABEL = "layer (0 = embeddings, L = output)"
TOGGLE_HELP = ("AsC-Eval from every layer's own next-token prediction: the model's final norm and output head "
               "applied to each layer's hidden state (the logit lens). Costs one forward pass plus one unembedding "
               "per layer, several forward passes' worth on a CPU; computed once per text and settings.")


@dataclass(frozen=True)
class Layers:
    """A result's per-layer explanation and the texts of its layers' top-k ids."""

    depth: LayerExplanation
    vocab: dict[int, str]


def load(result: InspectorResult, settings: Settings) -> Layers | None:
    """The "Per layer" toggle; when on, the per-layer AsC-Eval of the result shown (its text, model, language
    and aggregation), else None. A model without a lens (an encoder, an unknown architecture) gets an info."""
    if not st.toggle("Per layer (logit lens)", value=False, key="per_layer", help=TOGGLE_HELP):
        return None
    ex: Explanation = result.ex
    chosen: Settings = result.settings or settings
    try:
        with st.spinner("Running the logit lens over every layer..."):
            depth, vocab = cache.cached_explain_layers(result.model, chosen.trust_remote_code, ex.source,
                                                       ex.tree.language, ex.aggregate, chosen.device, chosen.dtype,
                                                       completion=result.completion)
    except InputError as err:
        st.info(f"Per-layer values are not available for this model: {err}")
        return None
    except AscError as err:
        st.error(str(err))
        return None
    return Layers(depth, vocab)


def layer_slider(layers: Layers | None, ex: Explanation) -> tuple[Explanation, int | None]:
    """The layer slider (default: the output) and the Explanation its layer draws; ``(ex, None)`` when off."""
    if layers is None:
        return ex, None
    last = layers.depth.n_layers - 1
    if not 0 <= st.session_state.get("depth_layer", last) <= last:  # another model, of other depth
        st.session_state["depth_layer"] = last
    st.session_state.setdefault("depth_layer", last)
    layer = st.slider(LABEL, 0, last, step=1, key="depth_layer",
                      help=f"This model: layer 0 is the embeddings, {last} the output. The sequence view and both "
                           "trees show that layer's probabilities and node values.")
    return layers.depth.at(layer, layers.vocab), layer


def panels(layers: Layers, layer: int, selected: int | None) -> None:
    """The category x layer heatmap, the selected node's value across layers, and their exports."""
    depth = layers.depth
    st.markdown(f"**Per layer** (logit lens; layer 0 = embeddings, {depth.n_layers - 1} = output): where each "
                f"category reaches the {CONFIDENCE_LINE:g} line")
    left, right = st.columns([3, 2])
    heatmap = category_layer_heatmap(depth, layer=layer)
    left.plotly_chart(heatmap, key="depth_heatmap")
    curve = node_layer_curve(depth, selected, layer=layer) if selected is not None else None
    if curve is not None:
        right.plotly_chart(curve, key="depth_curve")
    else:
        right.caption("Click a node in a tree (or pick one above) to see its value across layers.")
    d1, d2, d3 = st.columns(3)
    d1.download_button("Categories per layer CSV", lambda: csv_text(depth.category_frame()), "categories-per-layer.csv",
                       "text/csv", on_click="ignore", key="dl_depth_csv")
    d1.download_button("Per-layer JSON", lambda: json.dumps(depth.to_dict(), allow_nan=False), "asc-eval-layers.json",
                       "application/json", on_click="ignore", key="dl_depth_json")
    d2.download_button("Heatmap (HTML)", lambda: figure_html(category_layer_heatmap(depth)), "categories-per-layer.html",
                       "text/html", on_click="ignore", key="dl_depth_heatmap")
    if curve is not None and selected is not None:
        node = selected
        d3.download_button(f"Node {node} curve CSV", lambda: csv_text(depth.node_curve(node)),
                           f"node-{node}-per-layer.csv", "text/csv", on_click="ignore", key="dl_depth_node_csv")
        d3.download_button(f"Node {node} curve (HTML)", lambda: figure_html(node_layer_curve(depth, node)),
                           f"node-{node}-per-layer.html", "text/html", on_click="ignore", key="dl_depth_node_html")
