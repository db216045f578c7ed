"""Every loader of a user's file, fed random bytes, cut-off files and valid files with broken fields
(property-based, hypothesis): each returns a result or raises an :class:`asc.errors.AscError`, never another
exception (the CLI and the pages show an AscError as one line; anything else is a traceback or a crash).

Three kinds of input per loader: arbitrary bytes (and text that is not valid UTF-8), prefixes of a valid
file cut at a random point (a download or a copy stopped short), and a valid document with one to three
fields replaced by random JSON values or removed.
"""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from asc.errors import AscError

FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# ------------------------------------------------------------------------------------------ strategies

JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=12),  # json reads NaN, Infinity
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
    max_leaves=12,
)
RANDOM_BYTES = st.one_of(
    st.binary(max_size=400),
    st.text(max_size=200).map(lambda t: t.encode("utf-8", "surrogatepass")),  # lone surrogates: not UTF-8
    JSON.map(lambda v: json.dumps(v).encode()),
)

# nesting far deeper than Python's recursion limit: json and yaml recurse once per level
DEEP_LIST, DEEP_OBJECT = b"[" * 100_000, b'{"a": ' * 100_000


def prefixes(data: bytes) -> st.SearchStrategy[bytes]:
    """``data`` cut at a random point."""
    return st.integers(0, len(data)).map(lambda n: data[:n])


@st.composite
def mutated(draw, doc: Any) -> Any:
    """``doc`` (JSON-like) with one to three fields replaced by a random JSON value, or removed.

    The field is found by a random walk from the top (stop here or go deeper), so a top-level key is as
    likely to break as an item deep in an array."""
    doc = copy.deepcopy(doc)
    for _ in range(draw(st.integers(1, 3))):
        parent, key = None, None
        node = doc
        while isinstance(node, (dict, list)) and node:
            keys = list(node) if isinstance(node, dict) else list(range(min(len(node), 6)))
            parent, key = node, draw(st.sampled_from(keys))
            node = parent[key]
            if draw(st.booleans()):
                break
        if parent is None:
            return draw(JSON)
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[key]
        else:
            parent[key] = draw(JSON)
    return doc


def _json_bytes(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _yaml_bytes(value: Any) -> bytes:
    import yaml

    return yaml.safe_dump(value, allow_unicode=True).encode("utf-8", "surrogatepass")


def _result_or_asc_error(load: Callable[[], Any]) -> Any:
    """The loader's result, or None for an AscError; any other exception fails the example."""
    try:
        return load()
    except AscError as err:
        assert str(err).strip(), "an AscError must say what is wrong"
        return None


def _in_tmp(name: str, data: bytes, load: Callable[[Path], Any]) -> Any:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)
        return _result_or_asc_error(lambda: load(path))


# ------------------------------------------------------------------------------------------ valid documents

VALID_JSONL = b"".join(_json_bytes({"id": f"s{i}", "code": f"def f{i}(x):\n    return x + {i}\n",
                                    "language": "python"}) + b"\n" for i in range(3))
VALID_TSV_RAW = "".join(f"{s}\t{lab}\tdef f{i}(x): return {i}\n"
                        for i, (s, lab) in enumerate([("tr", "a"), ("tr", "b"), ("va", "a"), ("te", "b")])).encode()


def _valid_escaped_tsv() -> bytes:
    from probes.inspect.taskfile import TSV_HEADER

    return (TSV_HEADER + "\ntr\ta\tdef f():\\n\\treturn 1\nva\tb\tx = '\\\\'\nte\ta\ty = 2\n").encode()


def _study_text() -> bytes:
    from asc.paths import DEFAULT_STUDY

    return DEFAULT_STUDY.read_bytes()


def _study_data() -> Any:
    import yaml

    return yaml.safe_load(_study_text())


def _categories_data() -> Any:
    from asc.paths import CATEGORIES_DIR

    return json.loads((CATEGORIES_DIR / "python.json").read_text(encoding="utf-8"))


def _codesyntax_data() -> list:
    from probes.codesyntax.relations import extract

    samples = [extract("def f(x):\n    if x:\n        return x + 1\n    return g(x, y=2)\n"),
               extract("for i in range(3):\n    a[i] = i * 2\n")]
    return [{"id": i, **s.to_json()} for i, s in enumerate(samples)]


def _frozen_data(definition) -> dict:
    """A prepared study of ``definition`` in the frozen layout, with minimal scores (no model needed)."""
    from asc.study.frozen import content_hash

    scores = {"ids": [1, 2], "start": [0, 1], "end": [1, 2], "special": [False, False], "prob": [None, 0.5],
              "logprob": [None, -0.69], "entropy": [None, 1.0], "rank": [0, 1], "top_k": 1, "top_ids": [[1], [2]],
              "top_probs": [[None], [0.5]], "top_text": [["d"], ["e"]], "n_windows": 1}
    return {"format": 1, "study_id": definition.id, "definition_hash": content_hash(definition),
            "model": {"name": "tiny-random", "layers": 2, "parameters": 1}, "prepared_at": "2026-01-01T00:00:00+00:00",
            "samples": [{"id": s.id, "prompt": s.prompt, "completion": "de", "generated": True,
                         "stop_reason": "eos", "n_prompt": 1, "scores": copy.deepcopy(scores)}
                        for s in definition.samples]}


def _definition():
    from asc.paths import DEFAULT_STUDY
    from asc.study.definition import load_study

    return load_study(DEFAULT_STUDY)


DEFINITION = _definition()


def _frozen_with(change: Callable[[dict], None]) -> bytes:
    doc = _frozen_data(DEFINITION)
    change(doc)
    return _json_bytes(doc)


def test_the_valid_documents_load():
    """The seeds the mutations start from are valid, so the properties test broken versions of real files."""
    from asc.concepts import load_categories
    from asc.corpus.sources import load_corpus
    from asc.study.definition import load_study
    from asc.study.frozen import load_frozen
    from probes.codesyntax.samples import read_json
    from probes.inspect.taskfile import load_tsv

    assert len(_in_tmp("c.jsonl", VALID_JSONL, lambda p: load_corpus(str(p)))) == 3
    assert _in_tmp("t.tsv", VALID_TSV_RAW, load_tsv).n == 4
    assert _in_tmp("t.tsv", _valid_escaped_tsv(), load_tsv).texts[0] == "def f():\n\treturn 1"
    assert _in_tmp("s.yaml", _study_text(), load_study).id == DEFINITION.id
    assert _in_tmp("s.json", _json_bytes(_study_data()), load_study).id == DEFINITION.id
    assert len(_in_tmp("r.json", _json_bytes(_codesyntax_data()), read_json)) == 2
    frozen = _in_tmp("f.json", _json_bytes(_frozen_data(DEFINITION)), lambda p: load_frozen(p, DEFINITION))
    assert len(frozen.samples) == len(DEFINITION.samples)
    assert _in_tmp("python.json", _json_bytes(_categories_data()),
                   lambda p: load_categories("python", path=p)).categories


# ------------------------------------------------------------------------------------------ corpora


@FUZZ
@given(data=st.one_of(RANDOM_BYTES, prefixes(b"def f(x):\n    y = x + 1\n    if y:\n        return y\n"
                                             b"    return 0\n\n\nclass A:\n    def g(self):\n        pass\n")))
def test_load_corpus_of_a_folder_with_a_random_py_file(data):
    from asc.corpus.sources import load_corpus

    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "random.py").write_bytes(data)
        (Path(folder) / "Random.java").write_bytes(data)
        _result_or_asc_error(lambda: load_corpus(folder, min_lines=1))


@FUZZ
@given(data=st.one_of(RANDOM_BYTES, prefixes(VALID_JSONL),
                      st.lists(JSON, max_size=4).map(lambda vs: b"\n".join(_json_bytes(v) for v in vs)),
                      st.lists(mutated({"id": "a", "code": "def f():\n    return 1\n", "language": "python"}),
                               min_size=1, max_size=3).map(lambda vs: b"\n".join(_json_bytes(v) for v in vs))))
@example(data=DEEP_LIST)
@example(data=DEEP_OBJECT)
def test_load_corpus_of_a_random_jsonl_file(data):
    from asc.corpus.sources import load_corpus

    _in_tmp("random.jsonl", data, lambda p: load_corpus(str(p)))


# ------------------------------------------------------------------------------------------ probe files


@FUZZ
@given(data=st.one_of(RANDOM_BYTES, prefixes(VALID_TSV_RAW), prefixes(_valid_escaped_tsv())))
def test_load_tsv(data):
    from probes.inspect.taskfile import load_tsv

    _in_tmp("task.tsv", data, load_tsv)


@FUZZ
@given(data=st.one_of(RANDOM_BYTES, prefixes(_json_bytes(_codesyntax_data())),
                      mutated(_codesyntax_data()).map(_json_bytes)))
@example(data=DEEP_LIST)
@example(data=DEEP_OBJECT)
def test_read_codesyntax_json(data):
    from probes.codesyntax.samples import read_json

    _in_tmp("samples.json", data, read_json)


# ------------------------------------------------------------------------------------------ studies


@FUZZ
@given(data=st.one_of(RANDOM_BYTES, prefixes(_study_text()), mutated(_study_data()).map(_yaml_bytes)))
@example(data=DEEP_LIST)
@example(data=DEEP_OBJECT)
def test_load_study_yaml(data):
    from asc.study.definition import load_study

    _in_tmp("study.yaml", data, load_study)


@FUZZ
@given(data=st.one_of(RANDOM_BYTES, prefixes(_json_bytes(_study_data())), mutated(_study_data()).map(_json_bytes)))
@example(data=DEEP_LIST)
@example(data=DEEP_OBJECT)
def test_load_study_json(data):
    from asc.study.definition import load_study

    _in_tmp("study.json", data, load_study)


@FUZZ
@given(content=st.one_of(RANDOM_BYTES, prefixes(_json_bytes(_frozen_data(DEFINITION))),
                         mutated(_frozen_data(DEFINITION)).map(_json_bytes)))
@example(content=_frozen_with(lambda d: d.pop("prepared_at")))
@example(content=_frozen_with(lambda d: d.pop("model")))
@example(content=_frozen_with(lambda d: d["samples"][0]["scores"].update(ids=[2**70, 1])))
@example(content=_frozen_with(lambda d: d["samples"][0].update(n_prompt=float("inf"))))
@example(content=_frozen_with(lambda d: d["samples"][0]["scores"].update(top_k=2**70)))
@example(content=DEEP_LIST)
@example(content=DEEP_OBJECT)
def test_load_frozen(content):
    from asc.study.frozen import load_frozen

    _in_tmp("study.frozen.json", content, lambda p: load_frozen(p, DEFINITION))


# ------------------------------------------------------------------------------------------ category mappings


@FUZZ
@given(data=st.one_of(RANDOM_BYTES, prefixes(_json_bytes(_categories_data())),
                      mutated(_categories_data()).map(_json_bytes)))
@example(data=DEEP_LIST)
@example(data=DEEP_OBJECT)
def test_load_categories(data):
    from asc.concepts import load_categories

    _in_tmp("python.json", data, lambda p: load_categories("python", path=p))


# ------------------------------------------------------------------------------------------ not a file


def _corpus(path: Path) -> Any:
    from asc.corpus.sources import load_corpus

    return load_corpus(str(path))


def _tsv(path: Path) -> Any:
    from probes.inspect.taskfile import load_tsv

    return load_tsv(path)


def _codesyntax(path: Path) -> Any:
    from probes.codesyntax.samples import read_json

    return read_json(path)


def _study(path: Path) -> Any:
    from asc.study.definition import load_study

    return load_study(path)


def _frozen(path: Path) -> Any:
    from asc.study.frozen import load_frozen

    return load_frozen(path, DEFINITION)


def _categories(path: Path) -> Any:
    from asc.concepts import load_categories

    return load_categories("python", path=path)


LOADERS = {"corpus": ("c.jsonl", _corpus), "tsv": ("t.tsv", _tsv), "codesyntax": ("r.json", _codesyntax),
           "study": ("s.yaml", _study), "frozen": ("f.json", _frozen), "categories": ("python.json", _categories)}


@pytest.mark.parametrize("loader", LOADERS, ids=str)
@pytest.mark.parametrize("kind", ["missing", "folder"])
def test_a_missing_path_or_a_folder_is_a_clear_error(tmp_path, loader, kind):
    from asc.errors import AscError

    name, load = LOADERS[loader]
    path = tmp_path / name
    if kind == "folder":
        path.mkdir()
    with pytest.raises(AscError, match=str(path.name)):
        load(path)


# ------------------------------------------------------------------------------------------ run folders
# (last: asc/corpus/runs.py is being made robust to broken runs at the same time)


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    from asc.corpus.runs import run_corpus
    from asc.corpus.sources import Snippet
    from tests.support.models import tiny_random_model

    folder = tmp_path_factory.mktemp("fuzz-run") / "run"
    snippets = [Snippet("a", "def f(x):\n    return x + 1\n"), Snippet("b", "def g(y):\n    if y:\n        return 2\n")]
    run_corpus(tiny_random_model(), snippets, folder, corpus="fuzz", progress=False)
    return folder


@FUZZ
@given(data=st.data())
def test_load_run_with_a_broken_meta_json(run_folder, data):
    from asc.corpus.runs import load_run

    valid = (run_folder / "meta.json").read_bytes()
    content = data.draw(st.one_of(RANDOM_BYTES, prefixes(valid), mutated(json.loads(valid)).map(_json_bytes)))
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "run"
        shutil.copytree(run_folder, folder)
        (folder / "meta.json").write_bytes(content)
        _result_or_asc_error(lambda: load_run(folder))
