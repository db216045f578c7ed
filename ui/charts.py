"""Figures sized to their panel at the window the app is laid out for (1400 x 1000 px, the sidebar open).

Streamlit tells the server nothing about the browser's width, so panel widths are constants measured in Chromium at
that window (``tests/e2e/test_fit.py`` checks every page's figures against their panels there): :data:`MAIN_PX` for
the main column, :func:`panel_px` for one of ``n`` columns. Tree figures are drawn to fit a panel
(``tree_figure(max_width=...)``); :func:`panel_chart` shows one at its own width and, when it is wider than its panel
all the same (a very deep tree, a narrower window), makes the overflow obvious: an always visible scrollbar and a
line that says so. :func:`fit_square` shrinks a square map to its panel. :func:`table_height` is the height at which a
dataframe shows every row without a scrollbar of its own.
"""

from __future__ import annotations

from typing import Any

WINDOW_PX = (1400, 1000)  # the browser window the panel widths below are measured at
MAIN_PX = 940  # Streamlit's wide layout at that window: the main column, sidebar open
STUDY_PX = 1200  # the study page at that window: no sidebar
COLUMN_GAP_PX = 16  # st.columns' default gap ("small", 1rem)
TABLE_ROW_PX = 35  # a dataframe's row (and header) height, Streamlit's default
OVERFLOW_HINT = "This tree is wider than its panel: scroll sideways with the bar under it"


def panel_px(columns: int = 1, main: int = MAIN_PX) -> int:
    """The width of one of ``columns`` equal columns of the main column (``main`` px)."""
    return (main - COLUMN_GAP_PX * (columns - 1)) // columns


def overflow_css(key: str, box: str, width: float) -> str:
    """CSS that keeps the chart ``key`` at its figure's ``width`` and gives its container ``box`` a scrollbar that
    is always drawn (overlay scrollbars hide until used)."""
    scroller = f".st-key-{box}"
    return (f"<style>.st-key-{key}{{min-width:{int(width)}px;max-width:none !important}}"
            f"{scroller}{{overflow-x:scroll;scrollbar-width:auto;scrollbar-color:#8a8a8a #ececec}}"
            f"{scroller}::-webkit-scrollbar{{height:12px}}"
            f"{scroller}::-webkit-scrollbar-thumb{{background:#8a8a8a;border-radius:6px}}"
            f"{scroller}::-webkit-scrollbar-track{{background:#ececec}}</style>")


def table_height(rows: int) -> int:
    """The height (px) of an ``st.dataframe`` of ``rows`` rows that shows them all, header included, with no inner
    scrollbar (Streamlit's default caps a table at about 10 rows and scrolls the rest out of sight)."""
    return TABLE_ROW_PX * (rows + 1) + 3


def fit_square(fig: Any, panel: int) -> Any:
    """``fig`` (a square map, e.g. a word x word attention matrix) shrunk to ``panel`` px wide when wider, its
    height in proportion (cells stay square; the hover text still names every word)."""
    width, height = fig.layout.width, fig.layout.height
    if width is not None and width > panel:
        fig.update_layout(width=panel, height=int(height * panel / width) if height is not None else None)
    return fig


def panel_chart(where: Any, fig: Any, key: str, box: str, panel: int, hint: str = "", **kwargs: Any) -> Any:
    """``fig`` (a tree figure drawn for ``panel`` px) in a container ``box`` of ``where``, at the figure's own width;
    wider than ``panel``: a caption (``hint`` adds what else helps, e.g. folding) and a visible scrollbar. Returns
    what ``st.plotly_chart`` returns (``kwargs`` go to it)."""
    container = where.container(key=box)
    width = int(fig.layout.width)
    if width > panel:
        container.caption(f"{OVERFLOW_HINT}{hint}.")
        container.html(overflow_css(key, box, width))
    return container.plotly_chart(fig, key=key, width=width, **kwargs)
