"""probes.catalog: the 17 layer-probe tasks (INSPECT's 15, glueCode's NPATH and NULL), built together by name."""

import pytest

from asc.errors import InputError
from probes.catalog import GLUECODE_TASKS, INSPECT_TASKS, LAYER_TASK_INFO, LAYER_TASKS, build_tasks
from probes.gluecode.items import NPATH_BUCKETS


def test_the_catalogue_lists_inspect_then_gluecode():
    assert LAYER_TASKS[:15] == INSPECT_TASKS and LAYER_TASKS[15:] == GLUECODE_TASKS == ("NPATH", "NULL")
    assert set(LAYER_TASK_INFO) == set(LAYER_TASKS)
    assert "glueCode" in LAYER_TASK_INFO["NPATH"] and "glueCode" in LAYER_TASK_INFO["NULL"]
    assert "mypy" in LAYER_TASK_INFO["NULL"] and "not a proven bug" in LAYER_TASK_INFO["NULL"]


def test_inspect_and_gluecode_tasks_are_built_from_one_corpus():
    tasks = build_tasks(["len", " NPATH ", "LEN"], "algorithms", size=120, seed=0)  # names as typed, once each
    assert [t.name for t in tasks] == ["LEN", "NPATH"]
    length, npath = tasks
    assert npath.labels == NPATH_BUCKETS and len(length.labels) == 5
    assert length.meta["corpus"] == npath.meta["corpus"] == "algorithms"
    assert set(npath.split.tolist()) == {"tr", "va", "te"}


def test_each_function_is_parsed_once_for_all_the_tasks_and_the_tasks_are_unchanged(monkeypatch):
    """INSPECT's and glueCode's builds share the snippets' parsed functions: one parse per snippet for three tasks,
    and each task is the one built on its own."""
    from asc.corpus.sources import load_corpus
    from probes.gluecode import build as gluecode_build
    from probes.gluecode.probing import probe_task
    from probes.inspect import tasks as inspect_tasks

    snippets = load_corpus("algorithms")
    alone = [inspect_tasks.build_task("VCU", snippets, size=120), inspect_tasks.build_task("CPX", snippets, size=120),
             probe_task("NPATH", "algorithms", size=120, snippets=snippets)]
    parsed: list[str] = []
    real = inspect_tasks.function_node

    def counting(source: str):
        parsed.append(source)
        return real(source)

    monkeypatch.setattr(inspect_tasks, "function_node", counting)
    monkeypatch.setattr(gluecode_build, "function_node", counting)
    together = build_tasks(["VCU", "CPX", "NPATH"], "algorithms", size=120)
    assert len(parsed) == len(snippets) == len(set(parsed))
    assert [t.digest for t in together] == [t.digest for t in alone]


def test_unknown_names_list_every_valid_name():
    with pytest.raises(InputError, match="choose from KTX, IDN.*NPT, NPATH, NULL or 'all'"):
        build_tasks(["KTX", "NOPE"])
    with pytest.raises(InputError, match="NPATH or NULL"):
        build_tasks([])
