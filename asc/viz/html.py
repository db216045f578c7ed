"""Offline HTML exports: a plotly figure or an HTML fragment as one self-contained file."""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import plotly.graph_objects as go

__all__ = ["figure_html", "standalone_html"]


def figure_html(fig: go.Figure) -> str:
    """A self-contained HTML file for a plotly figure (plotly.js inlined: works offline)."""
    return fig.to_html(include_plotlyjs=True, full_html=True)


def standalone_html(fragment: str, title: str = "AsC Studio") -> str:
    """Wrap an HTML fragment (the sequence view) into a self-contained document."""
    return (f"<!doctype html><html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
            f"<body style='font-family:sans-serif'>{fragment}</body></html>")
