"""The user study's figure: Likert answers per group and question (the paper's Table III, drawn)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd
    import plotly.graph_objects as go

__all__ = ["rating_bars"]


def rating_bars(counts: pd.DataFrame) -> go.Figure:
    """User-study ratings: stacked bars of Likert answers per group, one panel per rating question.

    ``counts`` is :func:`asc.study.store.rating_counts` (group, question, level, label, count).
    """
    import plotly.express as px

    order = ["Strongly agree", "Agree", "Neutral", "Disagree", "Strongly disagree"]
    fig = px.bar(counts, x="group", y="count", color="label", facet_col="question", barmode="stack",
                 category_orders={"label": order},
                 color_discrete_sequence=["#2c7bb6", "#abd9e9", "#ffffbf", "#fdae61", "#d7191c"],
                 title="Ratings per group and question")
    fig.update_layout(legend_title_text="", height=380, margin={"l": 40, "r": 20, "t": 60, "b": 40})
    return fig
