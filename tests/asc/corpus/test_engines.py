"""asc.corpus.engines: a Ray run (local Ray, two actors sharing its chunks) writes the local engine's run folder
value for value, with ``--per-layer`` and ``--forks`` too, and a run stopped under one engine resumes under the other
without duplicates; ``import asc`` leaves Ray out. Every Ray test of the corpus runs is here, so that a worker starts
one local Ray for them all (tests/asc/corpus/conftest.py).

Each actor imports torch and transformers and loads the model (seconds of CPU), so only the first test starts two;
the others need one actor to make their claim."""

import subprocess
import sys

import pandas as pd
import pytest

from asc.branching.forks import ForkSettings
from asc.corpus import load_run, run_corpus
from asc.corpus.sources import load_corpus
from tests.helpers import ROOT

KEYS = {"snippets": ["id"], "tokens": ["snippet_id", "index"], "nodes": ["snippet_id", "id"],
        "concepts": ["snippet_id", "kind", "name"]}
N = 12
FORKS = ForkSettings(max_margin=0.0004, min_entropy=100.0)  # about half the tiny model's tokens (as test_forks.py)


def _assert_same_run(a, b, exact: bool = True) -> None:
    for table, keys in KEYS.items():
        x = getattr(a, table).sort_values(keys).reset_index(drop=True)
        y = getattr(b, table).sort_values(keys).reset_index(drop=True)
        assert not y.duplicated(keys).any(), f"{table} has duplicate rows"
        pd.testing.assert_frame_equal(x, y, check_exact=exact, atol=None if exact else 1e-5,
                                      rtol=None if exact else 1e-5)


@pytest.fixture(scope="module")
def snippets():
    return load_corpus("humaneval", limit=N)


@pytest.fixture(scope="module")
def reference(tiny, snippets, tmp_path_factory):
    out = tmp_path_factory.mktemp("engines") / "local"
    run_corpus(tiny, snippets, out, corpus="humaneval", batch_size=4, progress=False)
    return load_run(out)


@pytest.mark.slow
def test_ray_run_equals_local_run(ray_local, reference, snippets, tmp_path, monkeypatch):
    """Two actors share the run: Ray Data waits until both have loaded the model before it hands out the three chunks
    (else the first actor up may take all three while the second still imports torch)."""
    import ray.data

    from asc.corpus.engines import run_corpus_ray

    monkeypatch.setattr(ray.data.DataContext.get_current(), "wait_for_min_actors_s", 300)
    out = run_corpus_ray("tiny-random", snippets, tmp_path / "ray", corpus="humaneval", batch_size=4, workers=2,
                         progress=False)
    run = load_run(out)
    _assert_same_run(reference, run)
    assert run.meta.settings == reference.meta.settings and run.meta.finished
    assert sorted(p.name for p in (out / "tokens").iterdir()) == [f"part-{i:05d}.parquet" for i in range(3)]
    assert ray_local.is_initialized()  # a Ray it did not start is left running


@pytest.mark.slow
def test_a_model_the_actors_cannot_load_is_one_clear_error(ray_local, snippets, tmp_path):
    from asc.corpus.engines import run_corpus_ray
    from asc.errors import AscError

    with pytest.raises(AscError, match="no-such-model"):
        run_corpus_ray("no-such-model", snippets[:2], tmp_path / "bad", workers=1, progress=False)
    assert not (tmp_path / "bad").exists()  # the fresh folder is removed again


@pytest.mark.slow
def test_runs_resume_across_engines(ray_local, tiny, reference, snippets, tmp_path):
    """One actor per Ray run: resuming is about the folder, not the pool (two actors share a run above)."""
    from asc.__main__ import main
    from asc.corpus.engines import run_corpus_ray

    # local first half, then the CLI's ray engine finishes it
    run_corpus(tiny, snippets[: N // 2], tmp_path / "a", corpus="humaneval", batch_size=4,
               progress=False)
    code = main(["eval", "--model", "tiny-random", "--corpus", "humaneval", "--limit", str(N), "--out",
                 str(tmp_path / "a"), "--engine", "ray", "--workers", "1", "--batch-size", "4", "--quiet",
                 "--n-boot", "20"])
    assert code == 0
    _assert_same_run(reference, load_run(tmp_path / "a"), exact=False)  # other chunks: padding may differ

    # ray stopped after its first chunk, then the local engine finishes it
    seen: list[int] = []
    run_corpus_ray("tiny-random", snippets, tmp_path / "b", corpus="humaneval", batch_size=4, workers=1,
                   progress=False, on_progress=lambda done, total: seen.append(done), should_stop=lambda: True)
    partial = load_run(tmp_path / "b")
    assert seen == [4] and len(partial.snippets) == 4 and partial.meta.finished is None
    run_corpus(tiny, snippets, tmp_path / "b", corpus="humaneval", batch_size=4, progress=False)
    resumed = load_run(tmp_path / "b")
    assert resumed.meta.finished
    _assert_same_run(reference, resumed)  # the same chunks as the reference run: exact


@pytest.mark.slow
def test_ray_writes_the_same_layers_and_forks(ray_local, tiny, tmp_path):
    """One actor (each starts torch and the model) and one local run, both with ``--per-layer`` and ``--forks``:
    the layers/ and forks/ tables travel the engine's path and equal the local engine's, with the tokens and nodes
    they come with (two actors sharing a run: the first test)."""
    from asc.corpus.engines import run_corpus_ray

    few = load_corpus("humaneval", limit=6)
    local = tmp_path / "local"
    run_corpus(tiny, few, local, corpus="humaneval", batch_size=4, progress=False, layers=True, forks=FORKS)
    out = run_corpus_ray("tiny-random", few, tmp_path / "ray", corpus="humaneval", batch_size=4, workers=1,
                         progress=False, layers=True, forks=FORKS)
    order = {"layers": ["snippet_id", "layer", "node"], "forks": ["snippet_id", "category"],
             "tokens": ["snippet_id", "index"], "nodes": ["snippet_id", "id"]}
    for table, keys in order.items():
        a = pd.read_parquet(local / table).sort_values(keys).reset_index(drop=True)
        b = pd.read_parquet(out / table).sort_values(keys).reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b, obj=table)
    settings = load_run(out).meta.settings
    assert settings.per_layer is True and settings.forks == load_run(local).meta.settings.forks


def test_import_asc_does_not_import_ray():
    code = ("import sys, asc, asc.corpus, asc.corpus.engines, asc.__main__; "
            "sys.exit('ray' in sys.modules or any(m.startswith('ray.') for m in sys.modules))")
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=False).returncode == 0


def test_cli_ray_engine_takes_its_address_from_asc_ray_address(monkeypatch, tmp_path):
    from asc import paths
    from asc.__main__ import main
    from asc.corpus import engines
    from asc.errors import CorpusError

    seen = {}

    def fake(spec, snippets, out, **kw):
        seen.update(kw, spec=spec, n=len(snippets))
        raise CorpusError("stop here")

    monkeypatch.setattr(engines, "run_corpus_ray", fake)
    monkeypatch.delenv("ASC_RAY_ADDRESS", raising=False)
    assert paths.ray_address() is None
    monkeypatch.setenv("ASC_RAY_ADDRESS", " ray://head:10001 ")
    assert paths.ray_address() == "ray://head:10001"
    args = ["eval", "--model", "tiny-random", "--corpus", "humaneval", "--limit", "3", "--out", str(tmp_path / "o"),
            "--engine", "ray", "--workers", "3", "--gpus-per-worker", "0.5", "--quiet"]
    assert main(args) == 2
    assert seen["address"] == "ray://head:10001" and seen["workers"] == 3 and seen["gpus_per_worker"] == 0.5
    assert seen["spec"] == "tiny-random" and seen["n"] == 3
    assert main([*args, "--address", "auto"]) == 2 and seen["address"] == "auto"


@pytest.mark.slow
def test_the_address_probe_accepts_a_real_ray_head(ray_local):
    """The probe run before ray.init (tests/attacks/test_ray_address.py) takes a real GCS's first answer: the
    HTTP/2 SETTINGS frame of its gRPC server."""
    from asc.corpus.engines import probe_address, resolve_address

    address = ray_local.get_runtime_context().gcs_address
    assert resolve_address(address) == address
    probe_address(address, timeout=10)  # raises CorpusError when it does not answer as a gRPC server
