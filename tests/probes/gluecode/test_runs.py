"""probes.gluecode.runs: resumable predictions on disk, task sets built once, the Table 2 layout."""

import pytest

from probes.gluecode import runs
from probes.gluecode.items import MASK, OPERATORS, Item, load_items
from probes.gluecode.zeroshot import accuracy_table


def ops_items(n: int) -> list[Item]:
    return [Item(task="OPS", id=f"OPS/{k}", split="test" if k % 2 else "dev", module=f"m{k}",
                 function=f"def f{k}(a, b):\n    return a {MASK} b\n", label=OPERATORS[k % 5], candidates=OPERATORS)
            for k in range(n)]


def test_a_stopped_run_resumes_without_answering_twice(tiny, tmp_path, monkeypatch):
    import probes.gluecode.zeroshot as zs

    calls = []
    real = zs.predict
    monkeypatch.setattr(zs, "predict", lambda b, items, level, **kw: calls.append(len(items)) or real(b, items, level))
    monkeypatch.setattr(runs, "_CHUNK", 4)
    items = {"OPS": ops_items(20)}  # 10 test items: chunks of 4, 4, 2
    stops = iter([False, True])
    runs.run_gluecode(tiny, items, tmp_path, corpus="toy", contexts=["function"], should_stop=lambda: next(stops, True))
    assert calls == [4]
    runs.run_gluecode(tiny, items, tmp_path, corpus="toy", contexts=["function"])
    assert calls == [4, 4, 2]
    predictions = runs.load_predictions(tmp_path)
    assert sorted(p.item_id for p in predictions) == sorted(it.id for it in items["OPS"] if it.split == "test")
    runs.run_gluecode(tiny, items, tmp_path, corpus="toy", contexts=["function"])
    assert calls == [4, 4, 2]  # nothing left to answer


def test_task_sets_are_built_once_per_size_and_seed(tmp_path):
    built = []

    def builder(task, corpus, size, seed):
        built.append((task, size, seed))
        return ops_items(6), {"n": 6}

    a = runs.build_or_load(tmp_path, "toy", ["OPS"], 6, 0, builder)
    b = runs.build_or_load(tmp_path, "toy", ["OPS"], 6, 0, builder)
    assert built == [("OPS", 6, 0)] and [it.id for it in a["OPS"]] == [it.id for it in b["OPS"]]
    runs.build_or_load(tmp_path, "toy", ["OPS"], 6, 1, builder)  # another seed: built again
    assert len(built) == 2
    header, _ = load_items(runs.task_file(tmp_path, "toy", "OPS"))
    assert header["provenance"] == {"n": 6, "corpus": "toy", "size": 6, "seed": 1}
    with pytest.raises(Exception, match="choose among"):
        runs.build_or_load(tmp_path, "toy", ["NOPE"], 6, 0, builder)


def test_table2_puts_models_beside_the_papers_rows(tiny, tmp_path):
    runs.run_gluecode(tiny, {"OPS": ops_items(8)}, tmp_path, corpus="toy", contexts=["function", "file"])
    table = runs.table2(accuracy_table(runs.load_predictions(tmp_path)))
    assert list(table.columns) == ["model", "context", "NPATH", "OPS", "NAME", "CALL", "NULL"]
    ours = table[table["model"] == "tiny-random"]
    assert sorted(ours["context"]) == ["file", "function"] and ours["OPS"].between(0, 1).all()
    paper = table[table["model"] == "paper: Transformer (CodeBERTa)"].iloc[0]
    assert (paper["NPATH"], paper["OPS"], paper["NAME"], paper["CALL"], paper["NULL"]) == (0.747, 0.782, 0.389, 0.534,
                                                                                         0.239)
