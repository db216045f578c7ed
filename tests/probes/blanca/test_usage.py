"""Static class usage (probes.blanca.usage): methods called on instances, from small snippets whose usage pairs are
known, Jaccard similarity, and seeded pair sampling balanced over similarity bins."""

import textwrap
from pathlib import Path

import pytest

from asc.errors import InputError
from probes.blanca.classes import ClassCatalog, ClassDoc
from probes.blanca.items import load_items, save_items
from probes.blanca.usage import (
    UsageIndex,
    extract_usage,
    module_imports,
    sample_usage_pairs,
    scan_usage,
    usage_items,
    usage_similarity,
)

SNIPPET = textwrap.dedent('''
    import collections
    import xml.etree.ElementTree as ET
    from sklearn.linear_model import SGDClassifier as SGD
    from statsmodels.api import GLM

    def train(x, y):
        clf = SGD(loss="hinge")
        clf.fit(x, y)
        out = clf.predict(x)
        glm = GLM(y, x)
        glm.fit()
        glm.predict(x)
        glm._private()
        return out

    def other():
        d = collections.OrderedDict()
        d.move_to_end("a")
        d = make()          # rebound: no longer an OrderedDict
        d.popitem()
        tree = ET.ElementTree()
        tree.parse("f.xml")
        items = []
        items.append(1)
        names = list()
        names.append(2)
        with open("f") as fh:
            fh.read()
        collections.Counter("abc").most_common(2)
''')


def test_methods_on_instances_of_resolved_classes():
    usage = extract_usage(SNIPPET, "example")
    assert usage["sklearn.linear_model.SGDClassifier"] == {"fit": 1, "predict": 1}
    assert usage["statsmodels.api.GLM"] == {"fit": 1, "predict": 1}  # _private is left out
    assert usage["collections.OrderedDict"] == {"move_to_end": 1}  # popitem came after d was rebound
    assert usage["xml.etree.ElementTree.ElementTree"] == {"parse": 1}
    assert usage["builtins.list"] == {"append": 1}  # names = list(); [] is no class call, items.append is no use
    assert usage["collections.Counter"] == {"most_common": 1}  # a call on the construction itself
    assert "builtins.open" not in usage  # a function: lower-case and not a built-in class


def test_figure_one_of_the_paper_gives_a_shared_pair():
    usage = extract_usage(SNIPPET, "example")
    sgd, glm = set(usage["sklearn.linear_model.SGDClassifier"]), set(usage["statsmodels.api.GLM"])
    assert usage_similarity(sgd, glm) == 1.0  # both fit and predict: used alike
    assert usage_similarity({"fit", "predict"}, {"fit", "transform", "score"}) == pytest.approx(1 / 4)
    assert usage_similarity(set(), set()) == 0.0


def test_relative_imports_local_classes_and_self_attributes():
    source = textwrap.dedent('''
        from .decoder import JSONDecoder
        from .. import Base

        class Local(Base):
            def __init__(self):
                self.dec = JSONDecoder()
                self.dec.configure()

            def run(self, text):
                self.dec.decode(text)
                helper = Local()
                helper.run("x")

        x: Local = Local()
        x.close()
        deque()
        (w := Local()).stop()
        w.start()
    ''')
    usage = extract_usage(source, "pkg.json", is_package=True)
    assert module_imports(__import__("ast").parse(source), "pkg.json", True)["JSONDecoder"] == "pkg.json.decoder.JSONDecoder"
    assert usage["pkg.json.decoder.JSONDecoder"] == {"configure": 1, "decode": 1}  # self.dec across methods
    assert usage["pkg.json.Local"] == {"run": 1, "close": 1, "stop": 1, "start": 1}
    as_module = extract_usage("from .. import Base\nb = Base()\nb.go()\n", "pkg.sub.mod")
    assert as_module == {"pkg.Base": {"go": 1}}  # a module's package is its parent


def test_known_names_restrict_the_classes():
    usage = extract_usage(SNIPPET, "example", known={"collections.OrderedDict", "collections.deque"})
    assert set(usage) == {"collections.OrderedDict"}
    with pytest.raises(InputError, match="does not parse as Python"):
        extract_usage("def broken(:\n", "bad")


def test_scan_over_a_folder(tmp_path: Path):
    pkg = tmp_path / "mypkg"
    (pkg / "tests").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "core.py").write_text("from collections import deque\nq = deque()\nq.append(1)\nq.popleft()\n")
    (pkg / "tests" / "__init__.py").write_text("")
    (pkg / "tests" / "test_core.py").write_text("import collections\nq = collections.deque()\nq.rotate(1)\n")
    (pkg / "broken.py").write_text("def (:\n")
    index = scan_usage([pkg], known={"collections.deque"})
    assert index.methods == {"collections.deque": {"append": 1, "popleft": 1, "rotate": 1}}
    assert index.files == 4 and len(index.failed) == 1 and "broken.py" in index.failed[0]
    no_tests = scan_usage([pkg], known={"collections.deque"}, include_tests=False)
    assert no_tests.methods == {"collections.deque": {"append": 1, "popleft": 1}}


def test_sampling_balanced_over_similarity_bins_and_seeded():
    sets = {f"c{i}": frozenset({f"m{i}", f"n{i}"}) for i in range(12)}  # disjoint: every pair has similarity 0
    sets |= {"a": frozenset({"x", "y"}), "b": frozenset({"x", "y", "z"}), "c": frozenset({"x", "q", "r", "s"})}
    sample = sample_usage_pairs(sets, per_bin=5, seed=0)
    zeros = [s for *_, s in sample if s == 0]
    assert len(zeros) == 5  # of the many zero pairs, five
    assert ("a", "b", pytest.approx(2 / 3)) in sample and ("a", "c", pytest.approx(1 / 5)) in sample
    assert sample == sample_usage_pairs(sets, per_bin=5, seed=0)
    assert sample != sample_usage_pairs(sets, per_bin=5, seed=1)


def test_usage_items_merge_aliases_and_need_docs(tmp_path: Path):
    catalog = ClassCatalog((ClassDoc("m.A", "doc of A", object, ("m.alias.A",)), ClassDoc("m.B", "doc of B", object),
                            ClassDoc("m.C", "", object)), ("m",), ())
    index = UsageIndex({"m.A": {"get": 2}, "m.alias.A": {"put": 1}, "m.B": {"get": 1, "put": 3, "pop": 1},
                        "m.C": {"get": 1, "put": 1}}, files=1)
    items = usage_items(index, catalog, min_methods=2)
    assert len(items) == 1  # C has no docs; A has two methods only after merging its alias
    item = items[0]
    assert (item.name_a, item.name_b, item.text_a) == ("m.A", "m.B", "doc of A")
    assert item.target == pytest.approx(2 / 3) and item.meta == {"shared": ["get", "put"]}
    header, loaded = load_items(save_items(tmp_path / "U.jsonl", "U", items))
    assert loaded == items and header["task"] == "U"
