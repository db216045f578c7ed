"""asc.corpus.digest: the per-part digests a run writes, read back whole or incrementally, against the node tables."""

import shutil

import numpy as np
import pandas as pd
import pytest

from asc.corpus.digest import DIGEST
from asc.corpus.runs import load_digest, load_run, parquet_bytes, run_corpus, write_chunk
from asc.errors import CorpusError
from tests.helpers import corpus_snippets


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    from tests.support.models import tiny_random_model

    out = tmp_path_factory.mktemp("digest") / "run"
    run_corpus(tiny_random_model(), corpus_snippets(7), out, corpus="toy", batch_size=3, progress=False)
    return out


def frame(digest):
    """The digest as (snippet id, category, type, value) rows, sorted."""
    run = load_run(digest.path, tables=("snippets",))
    ids = run.snippets["id"].to_numpy()
    return pd.DataFrame({"snippet_id": ids[digest.snippet], "category": np.array(digest.categories)[digest.category],
                         "type": np.array(digest.types)[digest.type], "value": digest.value}
                        ).sort_values(["snippet_id", "type", "value"]).reset_index(drop=True)


def test_digest_holds_every_categorized_valued_node(run_dir):
    digest = load_digest(run_dir)
    assert sorted(p.name for p in (run_dir / DIGEST).iterdir()) == [f"part-0000{i}.parquet" for i in range(3)]
    nodes = load_run(run_dir).nodes
    valued = nodes[nodes["category"].notna() & nodes["value"].notna()]
    expected = valued[["snippet_id", "category", "type", "value"]].sort_values(["snippet_id", "type", "value"])
    pd.testing.assert_frame_equal(frame(digest), expected.reset_index(drop=True), check_dtype=False)
    assert digest.n_snippets == 7 and digest.languages == ("python",)
    assert digest.first_snippet.sum() == valued["snippet_id"].nunique()
    assert digest.first_type.sum() == len(valued[["snippet_id", "type"]].drop_duplicates())
    assert digest.first_category.sum() == len(valued[["snippet_id", "category"]].drop_duplicates())


def test_runs_without_digests_are_digested_from_their_nodes(run_dir, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(run_dir, old)
    shutil.rmtree(old / DIGEST)  # a run written before digests existed
    a, b = load_digest(run_dir), load_digest(old)
    pd.testing.assert_frame_equal(frame(a), frame(b))
    assert a.n_snippets == b.n_snippets and a.languages == b.languages
    assert not (old / DIGEST).exists()  # readers write nothing


def test_a_growing_run_reads_only_its_new_parts(tmp_path):
    from tests.support.models import tiny_random_model

    out = tmp_path / "run"
    snippets = corpus_snippets(7)
    run_corpus(tiny_random_model(), snippets[:4], out, corpus="toy", batch_size=2, progress=False)
    before = load_digest(out)
    shutil.move(out / "corpus.json", tmp_path / "corpus.json")  # the next run plans a longer corpus
    run_corpus(tiny_random_model(), snippets, out, corpus="toy", batch_size=2, progress=False)
    after = load_digest(out, previous=before)
    assert after._cache["part-00000"] is before._cache["part-00000"]  # reused, not read again
    assert "part-00002" in after._cache and after.n_snippets == 7
    pd.testing.assert_frame_equal(frame(after), frame(load_digest(out)))


def test_write_chunk_digests_bytes_and_frames_alike(run_dir, tmp_path):
    run = load_run(run_dir)
    for name, as_bytes in (("frames", False), ("bytes", True)):
        out = tmp_path / name
        for table in ("tokens", "nodes", "concepts", "snippets"):
            (out / table).mkdir(parents=True)
        tables = {t: getattr(run, t) for t in ("tokens", "nodes", "concepts", "snippets")}
        write_chunk(out, 0, {t: parquet_bytes(df) for t, df in tables.items()} if as_bytes else tables)
    a = pd.read_parquet(tmp_path / "frames" / DIGEST / "part-00000.parquet")
    b = pd.read_parquet(tmp_path / "bytes" / DIGEST / "part-00000.parquet")
    pd.testing.assert_frame_equal(a, b)


def test_a_broken_digest_names_the_folder_and_the_fix(run_dir, tmp_path):
    bad = tmp_path / "bad"
    shutil.copytree(run_dir, bad)
    (bad / DIGEST / "part-00001.parquet").write_bytes(b"not parquet")
    with pytest.raises(CorpusError, match=r"bad is broken: part part-00001 .*delete it and run the evaluation again"):
        load_digest(bad)


def test_runs_record_each_snippets_complexity_as_lizard_counts_it(run_dir):
    from asc.complexity import complexity_of_source

    snippets = load_run(run_dir, tables=("snippets",)).snippets
    expected = [complexity_of_source(src) for src in snippets["source"]]
    np.testing.assert_array_equal(snippets["complexity"].to_numpy(float), np.array(expected, dtype=float))
    assert (snippets["complexity"] >= 1).any()
