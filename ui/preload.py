"""Imports, once and in one thread, every module the app's pages import: ``app.py`` and every page import this first.

Streamlit runs each browser session's script in a thread of its own. On a fresh server, sessions opened side by
side import the backend for the first time at the same moment, and Python's per-module import locks can then
deadlock: one thread runs a package's ``__init__``, which imports its submodules, while another imports one of
those submodules directly (CPython takes the submodule's lock before it looks at the package). Python breaks the
deadlock by handing one of the threads a partially initialized module, and that page died with "ImportError:
cannot import name 'blanca_job' from partially initialized module 'probes.blanca.runs'" shown in the browser, to
anonymous visitors too (``tests/attacks/test_gate_browser.py`` opens the page-file addresses side by side; it
found this). With this module imported first, the first session imports everything below while holding this
module's lock, and every other session waits on that lock, then finds the modules in ``sys.modules``.

The cost: the first page of a fresh server imports what every page needs (a few seconds more once); the pages
opened after it import nothing. The imported objects are then frozen (``gc.freeze``): they live as long as the
process, and Python's garbage collector stops walking them. ``ui/__init__.py`` must stay free of imports: a thread
that imports ``ui.x`` while another runs ``ui``'s ``__init__`` would not wait for it.
"""

from __future__ import annotations

import gc
import importlib

#: the packages whose ``__init__`` imports their submodules (the ones a lock inversion needs), then every ui module
#: a page imports at its top
MODULES = (
    "asc", "asc.viz", "asc.export", "asc.jobs", "asc.why", "asc.corpus", "asc.branching", "asc.study",
    "probes", "probes.inspect", "probes.codesyntax", "probes.gluecode", "probes.blanca", "probes.figures",
    "probes.catalog",
    "ui.access", "ui.cache", "ui.charts", "ui.gate", "ui.guards", "ui.jobs", "ui.widgets", "ui.study",
    "ui.branches_view", "ui.depth_view", "ui.patch_view", "ui.why_view", "ui.corpus_attribution_view",
)

for _name in MODULES:
    importlib.import_module(_name)
# what the imports made lives as long as the process: Python's collector no longer walks it (about 300,000 objects,
# a fifth of a second per full collection; the app server runs no collection of its own after each script run:
# ui/serve.py, QUIET_SERVER)
gc.freeze()
