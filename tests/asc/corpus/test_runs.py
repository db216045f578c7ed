"""asc.corpus.runs: Parquet layout, resume, cut chunks, settings guard, meta.json (Table I: test_summary.py)."""

import io
import json

import numpy as np
import pandas as pd
import pytest

from asc.align import AlignOptions
from asc.branching.forks import ForkSettings
from asc.concepts import load_categories
from asc.corpus import load_run, run_corpus
from asc.corpus.forks import fork_table
from asc.corpus.runs import check_out, load_digest
from asc.corpus.sources import Snippet
from asc.errors import CorpusError
from asc.explain import explain
from tests.helpers import corpus_snippets


def test_run_writes_tables_that_match_explain(tiny, tmp_path):
    snips = corpus_snippets(5)
    run_corpus(tiny, snips, tmp_path / "run", corpus="test", batch_size=2, progress=False)
    run = load_run(tmp_path / "run")
    assert list(run.snippets["id"]) == [s.id for s in snips]
    assert run.meta.model_name == "tiny-random"
    # the batched run gives the same numbers as explaining one snippet alone
    ex = explain(tiny, snips[3].source)
    nodes = run.nodes[run.nodes["snippet_id"] == "s3"]
    np.testing.assert_allclose(nodes["value"].to_numpy(), ex.values, atol=1e-6, equal_nan=True)
    toks = run.tokens[run.tokens["snippet_id"] == "s3"]
    np.testing.assert_allclose(toks["prob"].to_numpy(), ex.scores.prob, atol=1e-6, equal_nan=True)
    assert run.snippets.set_index("id").loc["s3", "loss"] == pytest.approx(ex.loss, abs=1e-6)
    # absent concepts have no row (missing, not 0); present ones match the snippet's values
    conc = run.concepts[run.concepts["snippet_id"] == "s3"]
    cats = conc[conc["kind"] == "category"].set_index("name")["value"]
    assert "Exceptions" not in cats.index
    for name, value in ex.category_values.items():
        if np.isnan(value):
            assert name not in cats.index
        else:
            assert cats[name] == pytest.approx(value)
    assert 0 < len(cats) < len(ex.category_values)  # some categories present, some absent
    assert (conc["kind"] == "global").sum() == 1


def test_resume_skips_done_snippets_and_cleans_cut_chunks(tiny, tmp_path):
    out = tmp_path / "run"
    run_corpus(tiny, corpus_snippets(4), out, batch_size=2, progress=False)
    # simulate a chunk cut after its token part was written but before its snippets part
    pd.DataFrame({"snippet_id": ["ghost"]}).to_parquet(out / "tokens" / "part-00009.parquet")
    calls = []
    run_corpus(tiny, corpus_snippets(7), out, batch_size=2, progress=False, on_progress=lambda d, t: calls.append((d, t)))
    run = load_run(out)
    assert sorted(run.snippets["id"]) == sorted(f"s{i}" for i in range(7))
    assert run.snippets["id"].is_unique
    assert "ghost" not in set(run.tokens["snippet_id"])
    assert calls == [(6, 7), (7, 7)]  # only the 3 new snippets were scored


def test_other_settings_are_refused(tiny, tmp_path):
    out = tmp_path / "run"
    run_corpus(tiny, corpus_snippets(2), out, progress=False)
    with pytest.raises(CorpusError, match="other settings"):
        run_corpus(tiny, corpus_snippets(2), out, aggregate="mean", progress=False)
    with pytest.raises(CorpusError, match="other settings"):
        run_corpus(tiny, corpus_snippets(2), out, options=AlignOptions(whitespace="skip"), progress=False)


def test_load_run_requires_meta(tmp_path):
    with pytest.raises(CorpusError, match="meta.json"):
        load_run(tmp_path)


def test_meta_is_json(tiny, tmp_path):
    run_corpus(tiny, corpus_snippets(1), tmp_path / "r", corpus="x", progress=False)
    meta = json.loads((tmp_path / "r" / "meta.json").read_text())
    assert meta["settings"]["corpus"] == "x" and "finished" in meta


def test_a_runs_language_is_the_same_from_its_tables_its_digest_and_its_forks(tiny, tmp_path, monkeypatch):
    """One answer (asc.concepts.language_of) wherever a run is read from: a run whose first snippet is Python and
    whose other is Java is in Java (sorted first), for its tables, its digest and its fork rates alike."""
    import asc.corpus.forks

    snips = [corpus_snippets(1)[0], Snippet(id="j1", source="class A { int f(int x) { return x + 1; } }",
                                            language="java")]
    run_corpus(tiny, snips, tmp_path / "run", corpus="mixed", progress=False, forks=ForkSettings())
    assert load_run(tmp_path / "run", tables=("snippets",)).language == "java"
    assert load_digest(tmp_path / "run").language == "java"
    asked: list[str] = []
    monkeypatch.setattr(asc.corpus.forks, "load_categories", lambda language: asked.append(language) or
                        load_categories(language))
    fork_table(tmp_path / "run", n_boot=10)
    assert asked == ["java"]


def test_chunks_are_written_while_python_shuts_down(tiny, tmp_path, monkeypatch, request):
    """Ctrl-C on the app: Python refuses new thread-pool work before the app's exit hook lets the running chunk end
    (tests/e2e/test_stop.py). pyarrow converts a frame of over 100 rows per column in a pool by default, and that
    chunk then failed the run; the corpus writers convert in their own thread, to the bytes ``to_parquet`` writes."""
    import concurrent.futures.thread as pool

    import pyarrow as pa

    from asc.corpus.depth import layer_bytes
    from asc.corpus.tables import parquet_bytes

    frame = pd.DataFrame({"snippet_id": [f"s{i % 7}" for i in range(1000)], "value": np.linspace(0, 1, 1000)})
    expected = parquet_bytes(frame)
    assert expected == frame.to_parquet(index=False)
    cores = pa.cpu_count()  # pyarrow takes OMP_NUM_THREADS (1 in a pytest-xdist worker): the app server's two cores
    pa.set_cpu_count(2)
    monkeypatch.setattr(pool, "_shutdown", True)
    request.addfinalizer(lambda: pa.set_cpu_count(cores))
    with pytest.raises(RuntimeError, match="after interpreter shutdown"):
        frame.to_parquet(index=False)  # the failure this guards against
    assert parquet_bytes(frame) == expected
    assert pd.read_parquet(io.BytesIO(layer_bytes([frame]))).equals(frame)
    run_corpus(tiny, corpus_snippets(3), tmp_path / "run", corpus="test", batch_size=3, progress=False)
    assert len(load_run(tmp_path / "run").snippets) == 3


def test_check_out_refuses_without_a_model_what_the_run_would_refuse(tiny, tmp_path):
    """The CLI calls it before loading the model: a path under a file, a folder another writer holds and a folder of
    another corpus are refused as the run refuses them; a new path, or the same corpus again, passes and nothing is
    written."""
    import fcntl

    snippets = corpus_snippets(2)
    check_out(tmp_path / "new" / "run", snippets)
    assert not (tmp_path / "new").exists()
    (tmp_path / "file").write_text("x")
    for out in (tmp_path / "file", tmp_path / "file" / "run"):
        with pytest.raises(CorpusError, match="is a file\\): give another --out"):
            check_out(out, snippets)
    done = tmp_path / "done"
    run_corpus(tiny, snippets, done, progress=False)
    before = sorted(p.relative_to(done) for p in done.rglob("*"))
    check_out(done, snippets)  # the same corpus: it resumes
    with pytest.raises(CorpusError, match="another corpus"):
        check_out(done, snippets[1:])  # s0 is done, and not in this plan
    with (done / ".lock").open("a") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        with pytest.raises(CorpusError, match="another evaluation is writing"):
            check_out(done, snippets)
    assert sorted(p.relative_to(done) for p in done.rglob("*")) == before
