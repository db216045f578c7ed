"""glueCode contexts (probes.gluecode.context): masking, the function's place in its file, the static call graph."""

import ast
import re
import sysconfig
import textwrap
from pathlib import Path

import pytest

from asc.corpus.sources import load_corpus
from asc.errors import InputError
from probes.gluecode.callgraph import (
    CorpusFiles,
    ast_noncode_spans,
    called_names,
    callgraph_text,
    corpus_root,
    module_name,
)
from probes.gluecode.context import (
    FunctionContexts,
    build_contexts,
    locate_function,
    mask_contexts,
    mask_name,
    mask_span,
    name_visible,
    noncode_spans,
)
from probes.gluecode.items import MASK

CORE = '''\
"""Shopping carts."""

import math
from .util import normalize


class Cart:
    """A cart of items."""

    def __init__(self, items):
        self.items = items

    def compute_total(self, rate):
        """Sum of the prices with tax."""
        total = 0
        for item in self.items:
            total = total + normalize(item.price)
        return self.apply_tax(total, rate)

    def apply_tax(self, total, rate):
        """Add the tax to a total."""
        result = total * (1 + rate)
        if result < 0:
            result = 0
        return result


def report(cart):
    """Describe the cart's total."""
    # compute_total is called here
    text = "total: "
    value = cart.compute_total(0.2)
    return text + str(value)
'''

UTIL = '''\
import math


def normalize(price):
    """Round a price to cents."""
    if price < 0:
        price = 0
    return round(price, 2)


def gcd(a, b):
    """The package's own gcd."""
    while b:
        a, b = b, a % b
    return a


def uses_math(a, b):
    """Calls the stdlib's gcd."""
    x = math.gcd(a, b)
    y = x + 1
    return y
'''

LOOSE = '''\
def alone(x):
    """A module outside any package."""
    y = x + 1
    z = y * 2
    return z
'''


@pytest.fixture()
def shop(tmp_path: Path) -> Path:
    pkg = tmp_path / "shop"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "core.py").write_text(CORE)
    (pkg / "util.py").write_text(UTIL)
    (tmp_path / "loose.py").write_text(LOOSE)
    return tmp_path


def _snippet(root: Path, name: str):
    return next(s for s in load_corpus(str(root)) if s.name == name)


# ---------------------------------------------------------------------------------------------- masking
def test_mask_name_masks_identifier_tokens_only():
    text = ('def foo(x):\n    """foo in a docstring."""\n    y = foobar(x) + foo(x - 1)  # foo in a comment\n'
            '    s = "foo" + f"{foo}"\n    return obj.foo(y, _foo=1)\n')
    masked = mask_name(text, "foo")
    assert masked == (f'def {MASK}(x):\n    """foo in a docstring."""\n    y = foobar(x) + {MASK}(x - 1)  # foo in a '
                      f'comment\n    s = "foo" + f"{{foo}}"\n    return obj.{MASK}(y, _foo=1)\n')
    assert name_visible(masked, "foo") and not name_visible(masked.replace("foo", "bar"), "foo")


def test_mask_name_with_strings_masks_whole_words_in_strings_and_comments():
    text = 'def foo(x):\n    """Call foo, not foobar."""\n    return foo(x)  # foo\n'
    assert mask_name(text, "foo", strings=True) == (f'def {MASK}(x):\n    """Call {MASK}, not foobar."""\n'
                                                    f'    return {MASK}(x)  # {MASK}\n')


@pytest.mark.parametrize("name", ["aa", "a", "foo", "_x", "é", "nä", "x\u0301"])
def test_whole_words_are_the_regex_s_matches(name):
    """mask_name and name_visible find ``name`` with str.find and check its neighbours: exactly where
    ``(?<!\\w)name(?!\\w)`` matches, overlaps, Unicode letters and a combining accent (no word character) included."""
    text = ("aa aaa a a_aa aa. (aa)aa\n_x x_x xx _x2 foo.foo(foofoo, foo)\né é́ éa ané nä nänä x\u0301 xx\u0301 x\u0301x\u0301 "
            "x\u0301\u0301 aa")
    word = re.compile(rf"(?<!\w){re.escape(name)}(?!\w)")
    wanted = [m.start() for m in word.finditer(text)]
    assert wanted  # every name stands somewhere as a whole word
    masked = mask_name(text, name, replacement="@", strings=True)
    assert [m.start() + len(name) * k - k for k, m in enumerate(re.finditer("@", masked))] == wanted
    assert name_visible(text, name)
    assert name_visible(masked, name) == bool(word.search(masked))  # "x\u0301x\u0301" masked leaves "x\u0301@"


def test_mask_errors_name_the_fix():
    with pytest.raises(InputError, match="not an identifier"):
        mask_name("x = 1\n", "for")
    with pytest.raises(InputError, match="mask a span instead"):
        mask_name("x = (1,\n", "x")
    with pytest.raises(InputError, match="not inside the text"):
        mask_span("abc", 2, 9)
    with pytest.raises(InputError, match="either a name or a span"):
        mask_contexts(FunctionContexts("x = 1\n"))


def test_noncode_spans_from_ast_equal_tokenize(shop: Path):
    texts = [CORE, UTIL, 'x = ("a"  # c\n     "b")\ny = f"{x!r:>{3}}" # tail\n#only\nz = b"#no"\n']
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    texts += [(stdlib / name).read_text(encoding="utf-8") for name in ("textwrap.py", "json/decoder.py", "string.py")]
    for text in texts:  # same words counted as code (ast may join "a" "b" across a comment: a wider span)
        ours, theirs = ast_noncode_spans(text, ast.parse(text)), noncode_spans(text)
        for m in re.finditer(r"[A-Za-z_]\w*", text):
            assert _inside(m.start(), ours) == _inside(m.start(), theirs), text[m.start() - 20:m.end() + 20]
    assert noncode_spans('x = "a"  # c\n') == [(4, 7), (9, 12)]


def _inside(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in spans)


# ---------------------------------------------------------------------------------------------- placement
def test_locate_function_finds_a_method_with_its_indentation():
    lines = CORE.split("\n")
    line = lines.index("    def compute_total(self, rate):") + 1
    method = textwrap.dedent("\n".join(lines[line - 1:line + 5])) + "\n"
    assert method.startswith("def compute_total(self, rate):\n    \"\"\"Sum")
    assert locate_function(method, CORE, line) == 4
    assert locate_function(method, CORE, line + 1) is None
    assert locate_function(method.replace("total = 0", "total = 1"), CORE, line) is None


def test_function_span_maps_onto_the_file(shop: Path):
    snip = _snippet(shop, "compute_total")
    files = CorpusFiles(shop)
    ctx = build_contexts(snip.source, snip.origin, snip.line, files)
    assert ctx is not None and ctx.margin == 4 and ctx.file == CORE
    start = snip.source.index("normalize(")
    masked = mask_contexts(ctx, span=(start, start + len("normalize")))
    assert masked.function.count(MASK) == 1 and masked.file.count(MASK) == 1
    assert f"total = total + {MASK}(item.price)" in masked.function
    assert f"            total = total + {MASK}(item.price)" in masked.file
    assert masked.file.replace(MASK, "normalize") == CORE


def test_without_files_the_file_context_is_the_function():
    src = "def f(x):\n    return x\n"
    ctx = build_contexts(src, "", 1, None)
    assert ctx == FunctionContexts(src, src, "", 1, 0)
    assert mask_contexts(ctx, span=(4, 5)).file == f"def {MASK}(x):\n    return x\n"


def test_build_contexts_is_none_when_the_function_is_not_at_its_line(shop: Path):
    snip = _snippet(shop, "compute_total")
    assert build_contexts(snip.source, snip.origin, snip.line + 2, CorpusFiles(shop)) is None
    assert build_contexts(snip.source, "shop/missing.py", snip.line, CorpusFiles(shop)) is None


# ---------------------------------------------------------------------------------------------- files and index
def test_packages_and_modules(shop: Path):
    files = CorpusFiles(shop)
    assert files.package_paths("shop/core.py") == ("shop/__init__.py", "shop/core.py", "shop/util.py")
    assert files.package_name("shop/core.py") == files.package_name("shop/util.py") == "shop"
    assert files.package_paths("loose.py") == ("loose.py",) and files.package_name("loose.py") == "loose"
    assert module_name("shop/core.py") == "shop.core" and module_name("shop/__init__.py") == "shop"
    info = files.module("shop/core.py")
    assert info is not None and info.module == "shop.core"
    assert info.imports == {"math": ("math", False), "normalize": ("util.normalize", True)}
    assert {"Cart", "compute_total", "apply_tax", "report", "__init__"} <= info.defined
    calls = {d.name: d.calls for d in info.definitions if d.kind == "function"}
    assert calls["compute_total"] == {"normalize", "apply_tax"}
    assert calls["report"] == {"compute_total", "str"}
    util = files.module("shop/util.py")
    assert util is not None and {d.name: d.calls for d in util.definitions}["uses_math"] == frozenset()  # math.gcd


def test_called_names_in_order_and_external_left_out():
    func = ast.parse("def f(m):\n    a = g(1)\n    m.h()\n    math.gcd(1, 2)\n    g(2)\n").body[0]
    assert called_names(func) == ["g", "h", "gcd"]
    assert called_names(func, external={"math"}) == ["g", "h"]


def test_callgraph_lists_callees_and_callers_with_signatures_and_docstrings(shop: Path):
    files = CorpusFiles(shop)
    snip = _snippet(shop, "compute_total")
    ctx = build_contexts(snip.source, snip.origin, snip.line, files)
    assert ctx is not None
    text = ctx.callgraph
    callees, callers = text.split("what calls this function")
    assert "# in module shop.util\ndef normalize(price):\n    \"\"\"Round a price to cents.\"\"\"\n    ..." in callees
    assert "# method of class Cart, in this file\ndef apply_tax(self, total, rate):" in callees
    assert "Add the tax to a total." in callees and "result = total" not in text  # no bodies
    assert "# in this file\ndef report(cart):\n    \"\"\"Describe the cart's total.\"\"\"" in callers
    ast.parse(text)  # stubs are valid Python
    masked = mask_contexts(ctx, name="compute_total")
    assert "compute_total" not in masked.function and f"def {MASK}(self, rate):" in masked.function
    assert f"value = cart.{MASK}(0.2)" in masked.file and "# compute_total is called here" in masked.file


def test_callgraph_excludes_the_masked_callee_and_external_homonyms(shop: Path):
    files = CorpusFiles(shop)
    info = files.module("shop/core.py")
    assert info is not None
    target = next(d.node for d in info.definitions if d.name == "compute_total")
    assert "def normalize" not in callgraph_text(target, "shop/core.py", files.index("shop/core.py"),
                                                 exclude_callees=["normalize"])
    snip = _snippet(shop, "uses_math")
    ctx = build_contexts(snip.source, snip.origin, snip.line, files)
    assert ctx is not None and ctx.callgraph == ""  # math.gcd is not the package's gcd
    class_call = "def make(xs):\n    \"\"\"Make a cart.\"\"\"\n    c = Cart(xs)\n    d = c\n    return d\n"
    (shop / "shop" / "make.py").write_text("from .core import Cart\n\n\n" + class_call)
    ctx = build_contexts(class_call, "shop/make.py", 4, CorpusFiles(shop))
    assert ctx is not None
    assert "class Cart:\n    \"\"\"A cart of items.\"\"\"\n\n    def __init__(self, items):\n        ..." in ctx.callgraph


def test_corpus_roots():
    assert corpus_root("humaneval") is None and corpus_root("x.jsonl") is None
    assert corpus_root("stdlib") == Path(sysconfig.get_paths()["stdlib"])
    root = corpus_root("algorithms")
    assert root is not None and (root / "algorithms" / "__init__.py").is_file()
