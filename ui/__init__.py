"""Streamlit-only helpers the pages share; the only package besides ``pages/`` and ``app.py`` that imports
Streamlit. No analysis happens here: every number comes from ``asc`` or ``probes``.

- :mod:`ui.cache`: the shared models and cached results, one module per concern (explanations, runs, summaries, probes, study);
- :mod:`ui.widgets`: the sidebar, model pickers, styles, example snippets;
- :mod:`ui.jobs`: the app-wide background queue and its progress panel;
- :mod:`ui.guards`: check-then-branch guards (a model that loads, runs that exist, input that fits).
"""
