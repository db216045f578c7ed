"""Shared fixtures: the in-process tiny random model, with and without a BOS token; the real SmolLM2 and Gemma 3 (loaded
once per pytest-xdist worker); small real runs.

The real runs are session fixtures built once for the whole session with :func:`tests.helpers.built_once`: the first pytest-xdist
worker that asks builds the folder under a lock, the other waits for it (pytest-xdist's recipe for a session
fixture), and each worker gets a copy of its own (the app and the pages may write caches into a run folder), except
:func:`humaneval30` (half a minute of SmolLM2), which tests only read.

Every test runs offline (``HF_HUB_OFFLINE=1`` is set before transformers is imported).

A guard fails any test that loads an embedded real model (SmolLM2, Gemma, MiniLM), directly or through
a fixture, without ``@pytest.mark.real``: ``-m "not real"`` must stay fast and model-free. The tiny
random model, local folders and hub ids are not guarded. The guard sees loads in this process only
(a ``python -m asc`` subprocess is not watched).
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run from anywhere, not only from the repository root
    sys.path.insert(0, str(ROOT))
# the processes tests start (python -m asc, the browser tests' app server, Ray's workers) register the tests'
# tiny-random model too: their asc.models imports the modules ASC_MODEL_MODULES names, found through PYTHONPATH
os.environ["ASC_MODEL_MODULES"] = "tests.support.models"
_paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p and p != str(ROOT)]
os.environ["PYTHONPATH"] = os.pathsep.join([str(ROOT), *_paths])  # once, also in pytest-xdist's workers
# pytest-xdist's workers share the cores: without a limit each worker's torch (and every process a test starts)
# runs one OpenMP thread per core, and the spinning threads of the workers fight over the cores (real-model tests
# took 1.85x as long with two workers on two cores). Each worker gets its share of the cores, set before torch loads.
if os.environ.get("PYTEST_XDIST_WORKER") and "OMP_NUM_THREADS" not in os.environ:
    _workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    os.environ["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // max(1, _workers)))

import pytest  # noqa: E402

from tests.helpers import built_once  # noqa: E402
from tests.support.models import tiny_random_model  # noqa: E402

# ------------------------------------------------------------------------------------------ real-model guard

_state: dict = {"item": None, "violations": {}}


def real_model_names() -> frozenset[str]:
    """The embedded models with real weights (every registry name but synthetic ones, the tiny random model)."""
    from asc.models import EMBEDDED

    return frozenset(name for name, entry in EMBEDDED.items() if not entry.synthetic)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    """Remember the running test before its fixtures are set up (they may load models too)."""
    _state["item"] = item


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    _state["item"] = None


def _check_real_load(name: str) -> None:
    item = _state["item"]
    if name not in real_model_names() or item is None or item.get_closest_marker("real") is not None:
        return
    message = (f"{item.nodeid} loads the real model {name!r} but is not marked @pytest.mark.real "
               "(use the tiny model, or mark the test real)")
    _state["violations"].setdefault(item.nodeid, message)
    pytest.fail(message, pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _guard_real_models():
    """Wrap the loaders ``asc.models.load_model`` calls for embedded names (GGUF files and model folders)."""
    import asc.models as models

    from_gguf, from_folder = models._from_gguf, models._from_folder

    def guarded_gguf(name, *args, **kwargs):
        _check_real_load(name)
        return from_gguf(name, *args, **kwargs)

    def guarded_folder(name, *args, **kwargs):
        _check_real_load(name)
        return from_folder(name, *args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(models, "_from_gguf", guarded_gguf)
        mp.setattr(models, "_from_folder", guarded_folder)
        yield


_FAILED = pytest.StashKey[bool]()  # the test's setup or call already failed (and said why)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item, call):
    report = yield
    if report.when in ("setup", "call") and report.failed:
        item.stash[_FAILED] = True
    return report


@pytest.fixture(autouse=True)
def _no_swallowed_real_load(request):
    """Fail in teardown where the test (or a worker thread, or app code) caught the guard's failure."""
    yield
    message = _state["violations"].pop(request.node.nodeid, None)
    if message and not request.node.stash.get(_FAILED, False):
        pytest.fail(message, pytrace=False)


@pytest.fixture(autouse=True)
def _local_mode(monkeypatch, tmp_path_factory):
    """Tests run the app in local mode (free-text models and paths): AppTest has no server address, which the
    app reads as shared. tests/attacks/test_shared_mode.py sets ``ASC_SHARED=1`` where it tests shared mode.
    Local mode asks for an access token: off here (``ASC_TOKEN=off``); tests/attacks/test_gate.py tests it.
    A shared app run turns private writes on for the process (umask 077): they are turned off after each test.
    The default runs folder (``ASC_RUNS_DIR``) is a fresh temporary folder per test, so that nothing a test opens
    with the defaults (the study page creating its database, say) writes into the checkout's ``runs/``; a test
    that sets the variable itself, or removes it (tests/asc/test_paths.py), overrides this."""
    from asc.atomic import private_writes

    monkeypatch.setenv("ASC_SHARED", "0")
    monkeypatch.setenv("ASC_TOKEN", "off")
    monkeypatch.setenv("ASC_RUNS_DIR", str(tmp_path_factory.mktemp("default-runs")))
    yield
    private_writes(False)


# ------------------------------------------------------------------------------------------ timeline


def pytest_configure(config):
    # only a pytest-xdist worker of this session records (not a pytest that a test starts, in or out of process)
    _state["timeline"] = "off" if not hasattr(config, "workerinput") else None


def pytest_runtest_logstart(nodeid, location):
    _state["started"] = time.time()


def pytest_runtest_logfinish(nodeid, location):
    """One line per test in ``test-output/timeline-<worker>.tsv`` (worker, start, end, test) from each of
    pytest-xdist's workers: where each worker's wall time went (the junit file has each test's time, not when it ran
    or on which worker)."""
    started = _state.get("started")
    if _state.get("timeline") == "off" or started is None:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    out = ROOT / "test-output"
    out.mkdir(exist_ok=True)
    mode = "a" if _state.get("timeline") else "w"  # this session's first test starts the file afresh
    _state["timeline"] = "on"
    with (out / f"timeline-{worker}.tsv").open(mode, encoding="utf-8") as log:
        log.write(f"{worker}\t{started:.2f}\t{time.time():.2f}\t{nodeid}\n")


# ------------------------------------------------------------------------------------------ garbage collection


def pytest_collection_finish(session):
    """What collection imported (torch, transformers, the backend, the test modules: a few hundred thousand objects)
    lives as long as the session: frozen, Python's full collections stop walking it, as the app server's do
    (ui/preload.py)."""
    import gc

    gc.freeze()


# ------------------------------------------------------------------------------------------ AppTest modules


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by markers
def pytest_collection_modifyitems(config, items):
    """Mark ``apptest`` every test of a module that drives the app through Streamlit's AppTest (``make test-stress``
    reruns them with the browser tests, beside a CPU-bound process)."""
    uses: dict[Path, bool] = {}
    for item in items:
        path = Path(item.path)
        if path not in uses:
            uses[path] = path.suffix == ".py" and "AppTest" in path.read_text(encoding="utf-8")
        if uses[path]:
            item.add_marker(pytest.mark.apptest)


# ------------------------------------------------------------------------------------------ models and runs


@pytest.fixture(scope="session")
def tiny():
    """2-layer GPT-2 with random weights, 64-token context, no BOS token."""
    return tiny_random_model()


@pytest.fixture(scope="session")
def tiny_bos():
    """The same tiny model whose tokenizer puts ``<|endoftext|>`` first (offset (0, 0))."""
    return tiny_random_model(add_bos=True)


@pytest.fixture(scope="session")
def smol():
    """The real SmolLM2 (tests: ``real``), loaded once per worker and shared: loading it costs about 5 CPU-seconds
    and a dozen tests read it (the backend never mutates a bundle; tests that hook or patch the model load their
    own)."""
    from asc import load_model

    return load_model("smollm2-135m")


@pytest.fixture(scope="session")
def gemma():
    """The real Gemma 3 270M (tests: ``real``), loaded once per worker and shared, as :func:`smol`."""
    from asc import load_model

    return load_model("gemma3-270m")


@pytest.fixture(scope="session")
def runs_dir(tmp_path_factory, request):
    """Run folders ``smol`` (the real SmolLM2) and ``tiny`` on the same 5 HumanEval problems (tests: ``real``)."""
    def build(root: Path) -> None:
        from asc import load_corpus, run_corpus

        snippets = load_corpus("humaneval", limit=5)
        run_corpus(request.getfixturevalue("smol"), snippets, root / "smol", corpus="humaneval", progress=False)
        run_corpus(tiny_random_model(), snippets, root / "tiny", corpus="humaneval", progress=False)

    return built_once(request, tmp_path_factory, "runs", build)


@pytest.fixture(scope="session")
def humaneval30(tmp_path_factory, request):
    """The run folder of the real SmolLM2 on the first 30 HumanEval problems (tests: ``real``), built once per session
    (:func:`tests.helpers.built_once`); tests only read it. 30 is the causal estimate's minimum of snippets
    (:data:`asc.causal.MIN_SNIPPETS`); the Global demo runs the first 40 (tests/e2e/test_browser.py)."""
    def build(root: Path) -> None:
        from asc import load_corpus, run_corpus

        run_corpus(request.getfixturevalue("smol"), load_corpus("humaneval", limit=30), root / "smol",
                   corpus="humaneval", progress=False)

    return built_once(request, tmp_path_factory, "humaneval30", build, copy=False) / "smol"


@pytest.fixture(scope="session")
def runs(runs_dir):
    """The two runs of :func:`runs_dir` loaded: (SmolLM2, tiny model)."""
    from asc import load_run

    return load_run(runs_dir / "smol"), load_run(runs_dir / "tiny")
