"""Offline HTML exports (a plotly figure or an HTML fragment as one self-contained file), and escaping.

Plotly renders a subset of HTML in every label, hover text, legend entry and title (``<a href>``, ``<b>``,
``<br>``...): :func:`escape_text` turns user-derived text (code, model ids, corpus names, file labels)
into plain text there, so a string literal in a snippet cannot become a live link. :func:`visible_whitespace` draws a
token's spaces and newlines where a label would collapse them.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["escape_text", "figure_html", "standalone_html", "visible_whitespace"]

WHITESPACE = str.maketrans({" ": "·", "\n": "⏎", "\t": "→", "\r": "␍"})


def escape_text(text: object) -> str:
    """``text`` as plain text inside plotly labels and HTML element content: ``&``, ``<`` and ``>`` as entities
    (quotes stay: outside a tag they are text)."""
    return html.escape(str(text), quote=False)


def visible_whitespace(text: str) -> str:
    """``text`` with its whitespace drawn: ``·`` for a space, ``⏎`` for a newline, ``→`` for a tab, ``␍`` for a
    carriage return (browsers collapse runs of spaces and newlines in labels: ``'\\n    '`` and ``'\\n        '``
    would look the same)."""
    return text.translate(WHITESPACE)


def figure_html(fig: go.Figure) -> str:
    """A self-contained HTML file for a plotly figure (plotly.js inlined: works offline)."""
    return fig.to_html(include_plotlyjs=True, full_html=True)


def standalone_html(fragment: str, title: str = "AsC Studio") -> str:
    """Wrap an HTML fragment (the sequence view) into a self-contained document."""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
            f"<body style='font-family:sans-serif'>{fragment}</body></html>")
