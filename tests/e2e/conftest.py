"""What the browser tests under tests/e2e share: one chromium, and one app server on small results of every kind.

Every test here drives a browser: marked ``browser`` here, so a new file cannot forget it.

:func:`app_server` is the app as ``make app`` starts it, on the embedded default model (SmolLM2-135M), reading
:func:`e2e_runs`; test_browser.py and test_fit.py both use it (a session fixture: one server per pytest-xdist worker,
where each module started its own). The tests only read the runs and open their own sessions (a new page each),
so none sees another's widgets; what they share is the server's caches (a snippet explained, a model loaded), which
make a second explanation of the same snippet faster and no different. Servers in other configurations (a fresh
install, study mode) stay in the module that needs them.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.browser import chromium, serve
from tests.helpers import built_once

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by markers
def pytest_collection_modifyitems(config, items):
    for item in items:
        if HERE in Path(item.path).resolve().parents:
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="module")
def browser():
    """A headless Debian chromium (tests/browser.py); every test opens its own pages in it. Per module, not per
    session: Playwright's sync API keeps an asyncio loop running in the thread while it is open, and a later test in
    the same worker that starts its own Playwright (tests/packaging, tests/attacks) or an asyncio loop (Streamlit's
    AppTest switching pages) fails while it is."""
    with chromium() as b:
        yield b


@pytest.fixture(scope="session")
def e2e_runs(tmp_path_factory, request):
    """A runs folder with results for every page: the two HumanEval runs of ``runs_dir`` (SmolLM2, tiny), small
    attention, layer and glueCode runs of the tiny random model (glueCode: hand-made items of five tasks, two context
    levels), a small real BLANCA run (MiniLM on hand-made items of the five tasks), a tiny SAE of the tiny model
    (runs/sae/tiny: its quality and activations on eight HumanEval functions) and a small one of SmolLM2
    (runs/sae/smollm2, for the inspector's Features view; the Syntax features page opens it first).

    The glueCode run is the tiny model's, not SmolLM2's (a minute of CPU for the long file-level contexts): the page
    draws any run's answers the same way, and what the tests check of an item comes from the item (the answer's
    node, outlined) and from the sidebar's SmolLM2, which explains the function in the page itself.

    Built once per session and copied to each worker (:func:`tests.conftest.built_once`): each worker's app server
    writes into its own copy."""
    return built_once(request, tmp_path_factory, "e2e-runs", lambda root: _build_e2e_runs(
        root, request.getfixturevalue("runs_dir"), request.getfixturevalue("smol")))


def _build_e2e_runs(root: Path, runs_dir: Path, smol) -> None:
    from asc.models import load_model
    from probes.blanca.build import load_task_set
    from probes.blanca.runs import run_blanca
    from probes.catalog import layer_job
    from probes.codesyntax.attention import run_attention
    from probes.gluecode import runs as gluecode_runs
    from probes.sae import sae_job
    from tests.helpers import ATTENTION_CODES, gluecode_items, toy_task, write_blanca_set
    from tests.support.models import tiny_random_model

    for run in ("smol", "tiny"):
        shutil.copytree(runs_dir / run, root / run)
    tiny = tiny_random_model()
    run_attention(tiny, ATTENTION_CODES * 3, root / "attention", spec="tiny-random", ks=(1, 2))
    tsv = root / "toy.tsv"
    toy_task().to_tsv(tsv)
    layer_job([], root / "layers", task_files=[tsv])(tiny, lambda *_: None, lambda: False)
    tasks = ["NPATH", "OPS", "NAME", "CALL", "NULL"]
    items = gluecode_runs.build_or_load(root / "gluecode", "toy", tasks, 4, 0,
                                        lambda task, *_: (gluecode_items(task), {}))
    gluecode_runs.run_gluecode(tiny, items, root / "gluecode", task_set="toy-4-seed0", contexts=["function", "file"])
    run_blanca(load_model("minilm-l6"), load_task_set(write_blanca_set(root / "blanca")), root / "blanca")
    # the Syntax features page reads SAE folders only: a tiny SAE of the tiny model, trained, measured and enriched
    sae_job(root / "sae" / "tiny", train_corpus="humaneval", tokens=1024, width=32, k=4, limit=8,
            batch_size=256)(tiny, lambda *_: None, lambda: False)
    # ... and one of SmolLM2 (the server's model) for the inspector's Features view: small (256 tokens of 2
    # functions, 32 latents), measured and enriched on 2 functions
    sae_job(root / "sae" / "smollm2", train_corpus="humaneval", tokens=256, width=32, k=4, limit=2, train_limit=2,
            max_tokens=128, batch_size=128)(smol, lambda *_: None, lambda: False)


@pytest.fixture(scope="session")
def app_server(e2e_runs):
    """The app on :func:`e2e_runs` with the embedded default model (SmolLM2-135M); yields its address."""
    env = {**os.environ, "ASC_RUNS_DIR": str(e2e_runs)}
    env.pop("ASC_MODEL", None)  # the embedded default: SmolLM2-135M
    yield from serve(env, "streamlit.log")
