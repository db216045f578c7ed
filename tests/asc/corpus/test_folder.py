"""The run folder's owner: typed meta.json, the table registry, and a folder written by an earlier version.

``data/run-format2`` was written by commit 88719fe (before :mod:`asc.corpus.folder`) with the tiny model: 3
snippets in 2 chunks, ``--layers`` (now --per-layer), ``--forks`` and an ``attribution/`` table. Every reader must still open it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from asc.corpus.folder import (
    CORE_TABLES,
    TABLE_SPECS,
    RunMeta,
    RunSettings,
    finished_parts,
    read_meta,
    read_run_meta,
    run_language,
)
from asc.errors import CorpusError

OLD = Path(__file__).parent / "data" / "run-format2"


def test_a_folder_of_an_earlier_version_reads_typed():
    meta = read_run_meta(OLD)
    assert meta.model_name == "tiny-random" and meta.model.dtype == "float32" and meta.model.device == "cpu"
    assert meta.settings.corpus == "fixture" and meta.settings.per_layer and meta.settings.format == 2
    assert meta.settings.forks == {"max_margin": 0.1, "min_entropy": 2.0} and meta.n_planned == 3
    assert meta.finished is not None and meta.model.fields["layers"] == 2


def test_meta_round_trips_to_the_json_as_written():
    raw = read_meta(OLD)
    assert read_run_meta(OLD).as_dict() == raw
    built = RunSettings.from_dict(raw["settings"])
    assert RunSettings(**{f: getattr(built, f) for f in ("format", "model", "corpus", "aggregate", "align",
                                                        "max_window", "per_layer", "forks")}).as_dict()["layers"] is True


def test_a_run_without_per_layer_records_no_layers_key():
    settings = RunSettings.from_dict({"model": {"name": "m"}, "format": 2})
    assert not settings.per_layer and "layers" not in RunSettings(2, settings.model).as_dict()


def test_every_reader_opens_the_old_folder():
    from asc.corpus.depth import has_layers, layer_summary
    from asc.corpus.forks import fork_table, has_forks
    from asc.corpus.listing import run_info
    from asc.corpus.runs import load_digest, load_run
    from asc.corpus.summary import category_table, run_labels
    from asc.why.corpus_run import has_attribution
    from asc.why.matrix import run_matrix

    run = load_run(OLD)
    assert len(run.snippets) == 3 and run.meta.model_name == "tiny-random" and run.language == "python"
    digest = load_digest(OLD)
    assert digest.meta.settings.corpus == "fixture" and run_labels([digest]) == ["tiny-random"]
    table = category_table(digest, ["Functions"], n_boot=20)
    assert table["category"].tolist() == ["Global", "Functions"] and table["n_snippets"].tolist()[0] == 3
    assert has_layers(OLD) and set(layer_summary(OLD)["model"]) == {"tiny-random"}
    assert has_forks(OLD) and set(fork_table(OLD, n_boot=20)["corpus"]) == {"fixture"}
    assert has_attribution(OLD) and run_matrix(OLD, n_boot=20).model == "tiny-random"
    info = run_info(OLD)
    assert (info.model, info.corpus, info.n_planned, info.finished) == ("tiny-random", "fixture", 3, True)


def test_the_registry_lists_every_table_the_folder_holds():
    held = {p.name for p in OLD.iterdir() if p.is_dir()}
    assert held <= set(TABLE_SPECS) and set(CORE_TABLES) <= held
    for name in held - {"attribution"}:
        import pyarrow.parquet as pq

        columns = set(pq.ParquetFile(finished_parts(OLD, name)[0]).schema_arrow.names)
        assert set(TABLE_SPECS[name].columns) <= columns, name


def test_finished_parts_leave_out_a_cut_chunk(tmp_path):
    copy = Path(shutil.copytree(OLD, tmp_path / "run"))
    (copy / "snippets" / "part-00001.parquet").unlink()  # chunk 1 cut before its snippets part
    assert [p.name for p in finished_parts(copy, "tokens")] == ["part-00000.parquet"]
    with pytest.raises(CorpusError, match="no run table 'token'; choose one of snippets"):
        finished_parts(copy, "token")


def test_run_language_reads_the_snippets_parts():
    assert run_language(OLD) == "python"


@pytest.mark.parametrize(("change", "message"), [
    (lambda m: m.pop("settings"), "has no settings"),
    (lambda m: m["settings"]["model"].pop("name"), "names no model"),
    (lambda m: m["settings"].update(max_window="wide"), "settings cannot be read"),
    (lambda m: m["settings"].update(forks="yes"), "broken fork thresholds"),
])
def test_a_broken_meta_json_is_one_corpus_error_naming_the_fix(tmp_path, change, message):
    copy = Path(shutil.copytree(OLD, tmp_path / "run"))
    meta = json.loads((copy / "meta.json").read_text())
    change(meta)
    (copy / "meta.json").write_text(json.dumps(meta))
    with pytest.raises(CorpusError, match=f"{message}.*delete"):
        read_run_meta(copy)


def test_an_incomplete_run_has_no_finished_time():
    raw = read_meta(OLD)
    raw.pop("finished")
    assert RunMeta.from_dict(raw).finished is None and "finished" not in RunMeta.from_dict(raw).as_dict()
