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
    runs.run_gluecode(tiny, items, tmp_path, task_set="toy", contexts=["function"], should_stop=lambda: next(stops, True))
    assert calls == [4]
    runs.run_gluecode(tiny, items, tmp_path, task_set="toy", contexts=["function"])
    assert calls == [4, 4, 2]
    predictions = runs.load_predictions(tmp_path)
    assert sorted(p.item_id for p in predictions) == sorted(it.id for it in items["OPS"] if it.split == "test")
    runs.run_gluecode(tiny, items, tmp_path, task_set="toy", contexts=["function"])
    assert calls == [4, 4, 2]  # nothing left to answer


def test_task_sets_are_built_once_per_size_and_seed(tmp_path):
    built = []

    def builder(task, corpus, size, seed):
        built.append((task, size, seed))
        return ops_items(6), {"n": 6}

    a = runs.build_or_load(tmp_path, "toy", ["OPS"], 6, 0, builder)
    b = runs.build_or_load(tmp_path, "toy", ["OPS"], 6, 0, builder)
    assert built == [("OPS", 6, 0)] and [it.id for it in a["OPS"]] == [it.id for it in b["OPS"]]
    runs.build_or_load(tmp_path, "toy", ["OPS"], 6, 1, builder)  # another seed: another set, beside the first
    assert len(built) == 2 and runs.set_name("toy", 6, 1) == "toy-6-seed1"
    header, _ = load_items(runs.task_file(tmp_path, "toy-6-seed1", "OPS"))
    assert header["provenance"] == {"n": 6, "corpus": "toy", "size": 6, "seed": 1}
    assert runs.task_file(tmp_path, "toy-6-seed0", "OPS").is_file()
    # a file of another set copied into a set's folder is refused, never overwritten
    runs.task_file(tmp_path, "toy-6-seed1", "OPS").replace(runs.task_file(tmp_path, "toy-6-seed0", "OPS"))
    with pytest.raises(Exception, match="move it out"):
        runs.build_or_load(tmp_path, "toy", ["OPS"], 6, 0, builder)
    with pytest.raises(Exception, match="choose among"):
        runs.build_or_load(tmp_path, "toy", ["NOPE"], 6, 0, builder)


def test_table2_puts_models_beside_the_papers_rows(tiny, tmp_path):
    runs.run_gluecode(tiny, {"OPS": ops_items(8)}, tmp_path, task_set="toy", contexts=["function", "file"])
    table = runs.table2(accuracy_table(runs.load_predictions(tmp_path)))
    assert list(table.columns) == ["model", "context", "NPATH", "OPS", "NAME", "CALL", "NULL"]
    ours = table[table["model"] == "tiny-random"]
    assert sorted(ours["context"]) == ["file", "function"] and ours["OPS"].between(0, 1).all()
    paper = table[table["model"] == "paper: Transformer (CodeBERTa)"].iloc[0]
    assert (paper["NPATH"], paper["OPS"], paper["NAME"], paper["CALL"], paper["NULL"]) == (0.747, 0.782, 0.389, 0.534,
                                                                                         0.239)


def test_table2_orders_levels_local_to_global(tiny, tmp_path):
    runs.run_gluecode(tiny, {"OPS": ops_items(6)}, tmp_path, task_set="toy", contexts=["callgraph", "file", "function"])
    table = runs.table2(accuracy_table(runs.load_predictions(tmp_path)))
    assert list(table[table["model"] == "tiny-random"]["context"]) == ["function", "file", "callgraph"]


def test_a_run_goes_level_by_level_and_reports_progress_inside_chunks(tiny, tmp_path):
    seen = []
    items = {"OPS": ops_items(6), "NPATH": [
        Item(task="NPATH", id=f"NPATH/{k}", split="test", module="m", function=f"def g{k}():\n    return {k}\n",
             label="1", candidates=("1", "2")) for k in range(3)]}
    runs.run_gluecode(tiny, items, tmp_path, task_set="toy", contexts=["function", "file"],
                      on_progress=lambda stage, done, total: seen.append((stage, done, total)))
    stages = list(dict.fromkeys(stage for stage, _, _ in seen))
    assert stages == ["OPS function", "NPATH function", "OPS file", "NPATH file"]  # every task at a level first
    ops = [(d, t) for s, d, t in seen if s == "OPS function"]
    assert ops[-1] == (3, 3) and all(0 <= d <= t for d, t in ops) and len(ops) > 2  # per item, not per chunk


def test_predictions_of_one_corpus_and_task_sets_read_back(tiny, tmp_path):
    runs.run_gluecode(tiny, {"OPS": ops_items(4)}, tmp_path, task_set="one", contexts=["function"])
    runs.run_gluecode(tiny, {"OPS": ops_items(8)}, tmp_path, task_set="two", contexts=["function"])
    assert len(runs.load_predictions(tmp_path, "one")) == 2 and len(runs.load_predictions(tmp_path, "two")) == 4
    assert len(runs.load_predictions(tmp_path)) == 6
    runs.build_or_load(tmp_path, "one", ["OPS"], 4, 0, lambda *a: (ops_items(4), {}))
    sets = runs.load_task_sets(tmp_path)
    assert list(sets) == ["one-4-seed0"] and [it.id for it in sets["one-4-seed0"]["OPS"]] == [
        it.id for it in ops_items(4)]


def test_missing_tasks_are_built_together_from_one_parse_and_equal_those_built_one_by_one(tmp_path, monkeypatch):
    from probes.gluecode import callgraph

    one_by_one = {task: runs.build_task(task, "algorithms", 24, 0)[0] for task in ("OPS", "CALL")}
    parsed: list[str] = []
    real = callgraph.parse_module
    monkeypatch.setattr(callgraph, "parse_module", lambda text, path, *a: parsed.append(path) or real(text, path, *a))
    assert runs.build_or_load(tmp_path, "algorithms", ["OPS", "CALL"], 24, 0) == one_by_one
    assert parsed and len(parsed) == len(set(parsed))  # each file of the corpus parsed once for both tasks
    assert {task: load_items(runs.task_file(tmp_path, "algorithms-24-seed0", task))[1] for task in one_by_one} == one_by_one


def test_resuming_with_another_window_is_refused(tiny, tmp_path):
    items = {"OPS": ops_items(4)}
    runs.run_gluecode(tiny, items, tmp_path, task_set="toy", contexts=["function"], max_window=64)
    runs.run_gluecode(tiny, items, tmp_path, task_set="toy", contexts=["function"], max_window=64)  # same: fine
    with pytest.raises(Exception, match="--max-window"):
        runs.run_gluecode(tiny, items, tmp_path, task_set="toy", contexts=["function"])
    assert len(runs.load_predictions(tmp_path)) == 2  # nothing lost


def test_the_job_builds_then_answers(tiny, tmp_path, monkeypatch):
    monkeypatch.setattr(runs, "build_task", lambda task, corpus, size, seed: (ops_items(size), {}))
    monkeypatch.setattr(runs.build_or_load, "__defaults__", (runs.build_task,))
    stages = []
    call = runs.gluecode_job(["OPS"], "toy", tmp_path, contexts=["function"], size=4)
    call(tiny, lambda stage, done, total: stages.append(stage), lambda: False)
    assert stages[0] == "building tasks" and "OPS function" in stages
    assert sorted(p.item_id for p in runs.load_predictions(tmp_path, "toy-4-seed0")) == ["OPS/1", "OPS/3"]
