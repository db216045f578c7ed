"""Pure figure builders for "why this token?" (:mod:`asc.why`): results in, plotly figures out.

* :func:`patching_heatmap`: activation patching (:class:`asc.why.patching.Patching`), layer (rows, 0 = embeddings
  at the bottom) x patched AST node (columns, in source order, labelled with the node's text), the share of the
  target's clean log-probability restored on a diverging scale centred on 0 that is not red-to-blue (red to blue is
  confidence: :data:`asc.viz.colors.PATCHING_SCALE`, teal: restored, brown: below 0, patching made it worse; beyond
  +-1 the colour saturates), NaN cells (spans with no aligned token) left blank. Sized to fit a
  panel: columns of at most 28 pixels, labels cut to 18 characters (the full text is in the hover).

Node text is code, HTML-escaped before plotly draws it.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from asc.missing import ABSENT, UNDEFINED
from asc.viz.colors import PATCHING_SCALE
from asc.viz.html import escape_text
from asc.viz.treefit import wrap_px

if TYPE_CHECKING:
    import plotly.graph_objects as go

    from asc.why.patching import Patching

__all__ = ["PATCHING_SCALE", "patching_heatmap"]

_LABEL = 18
_TITLE_PX = 14  # the title's font size


def _label(text: str, k: int) -> str:
    flat = " ".join(text.split())
    return f"{k}: {escape_text(flat if len(flat) <= _LABEL else flat[:_LABEL - 1] + '…')}"


def patching_heatmap(p: Patching, title: str | None = None) -> go.Figure:
    """Layer x node heatmap of ``p.restored`` (module doc). Hover: node type, text, layer, restored share and the
    effect in nats; the title names the corruption and the target with its clean and corrupted log-probability."""
    import plotly.graph_objects as go

    labels = [_label(t, k) for k, t in enumerate(p.node_texts)]
    z = [[None if math.isnan(v) else v for v in row] for row in p.restored.tolist()]
    hover = [[f"{escape_text(t)} ({ty})<br>{UNDEFINED if v is None else f'{v:.3f}'} of the clean value restored"
              f"<br>effect {ABSENT if math.isnan(e) else f'{e:+.3f}'} nats"
              for t, ty, v, e in zip(p.node_texts, p.node_types, zrow, erow, strict=True)]
             for zrow, erow in zip(z, p.effect.tolist(), strict=True)]
    fig = go.Figure(go.Heatmap(
        z=z, x=labels, y=[int(v) for v in p.layers], colorscale=PATCHING_SCALE, zmid=0.0, zmin=-1.0, zmax=1.0,
        text=hover, hovertemplate="layer %{y}<br>%{text}<extra></extra>", hoverongaps=False, xgap=1, ygap=1,
        colorbar={"title": {"text": "share restored<br>(below 0: patching<br>made it worse)"},
                  "tickvals": [-1, -0.5, 0, 0.5, 1]}, name="restored",
    ))
    target = str(p.target.get("text", ""))
    width = max(360, min(1100, 160 + 28 * len(labels)))
    # the title wrapped to the figure's width (a one-node heatmap is narrow): never cut at its edge; wrap_px escapes
    heading = wrap_px(title or (f"{p.description}: target {target!r}, log p clean {p.clean_value:.3f}, "
                                f"corrupted {p.corrupted_value:.3f}"), width - 80, _TITLE_PX)
    lines = heading.count("<br>") + 1
    fig.update_layout(
        title={"text": heading, "font": {"size": _TITLE_PX}, "x": 0.02, "xanchor": "left"},
        xaxis={"title": "patched node", "tickangle": -45, "type": "category"},
        yaxis={"title": "layer (0 = embeddings)", "dtick": max(1, len(p.layers) // 10)},
        width=width, height=max(320, min(720, 140 + 16 * len(p.layers))) + (_TITLE_PX + 5) * (lines - 1),
        margin={"l": 60, "r": 20, "t": 30 + (_TITLE_PX + 5) * lines, "b": 120},
    )
    return fig
