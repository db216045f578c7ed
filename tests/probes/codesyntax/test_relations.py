"""probes.codesyntax.relations: CodeSyntax-style relation extraction, exact edges on hand-written snippets.

(The sample type and its JSON files: test_samples.py.)"""

from __future__ import annotations

import logging

import pytest

from asc.errors import InputError
from probes.codesyntax.relations import CodeParseError, extract, extract_many, word_tokens
from probes.codesyntax.samples import RELATIONS, Sample
from tests.helpers import BIG, IF_CODE, check_spans


def rel(sample: Sample, name: str) -> list[tuple[int, int, int]]:
    return list(sample.relns[name])


def text(sample: Sample, name: str) -> list[tuple[str, str]]:
    """Each edge as (head token, dependent tokens joined by spaces): readable twin of ``rel``."""
    return [(sample.tokens[h], " ".join(sample.tokens[s : e + 1])) for h, s, e in sample.relns[name]]


def nonempty(sample: Sample) -> set[str]:
    return {name for name, edges in sample.relns.items() if edges}


def check_forward(sample: Sample) -> None:
    n = len(sample.tokens)
    for name, edges in sample.relns.items():
        for h, s, e in edges:
            assert 0 <= h < s <= e < n, (name, h, s, e)


def test_word_tokens_keep_structure_drop_comments_and_blank_lines():
    code = "if a:  # note\n\n    b\n# end\n"
    tokens, spans = word_tokens(code)
    assert tokens == ("if", "a", ":", "\n", "    ", "b", "\n", "")
    assert spans == ((0, 2), (3, 4), (4, 5), (13, 14), (15, 19), (19, 20), (20, 21), (27, 27))
    # no final newline: NEWLINE is the empty string at the end
    assert word_tokens("x=1") == (("x", "=", "1", ""), ((0, 1), (1, 2), (2, 3), (3, 3)))




def test_if_else_elif():
    s = extract(IF_CODE)
    assert s.tokens[0] == "if" and s.tokens[10] == "elif" and s.tokens[21] == "else"
    assert rel(s, "If:if->else") == [(0, 10, 10), (10, 21, 21)]  # if -> elif, elif -> else
    assert rel(s, "If:if->test") == [(0, 1, 1), (10, 11, 11)]
    assert rel(s, "If:if->body") == [(0, 5, 7), (10, 15, 17)]  # last token of d(x) is x
    assert text(s, "If:if->body") == [("if", "b = 1"), ("elif", "d ( x")]
    assert rel(s, "If:test->body") == [(1, 5, 7), (11, 15, 17)]
    assert rel(s, "If:test->orelse") == [(1, 10, 25), (11, 25, 25)]  # outer orelse starts at elif
    assert rel(s, "If:body->orelse") == [(5, 10, 25), (15, 25, 25)]
    assert rel(s, "children:parent->child") == [
        (0, 1, 1), (0, 5, 7), (5, 7, 7), (0, 10, 25), (10, 11, 11), (10, 15, 17), (15, 17, 17), (10, 25, 25),
    ]  # fmt: skip
    plain = extract("if a:\n    b\n")
    assert rel(plain, "If:if->else") == rel(plain, "If:test->orelse") == rel(plain, "If:body->orelse") == []


def test_for_with_else():
    s = extract("for i, x in enumerate(xs):\n    s += x\nelse:\n    pass\n")
    assert rel(s, "For:for->body") == [(0, 12, 14)]
    assert rel(s, "For:for->target") == [(0, 1, 3)]
    assert rel(s, "For:for->iter") == [(0, 5, 7)]
    assert rel(s, "For:target->iter") == [(1, 5, 7)]
    assert rel(s, "For:target->body") == [(1, 12, 14)]
    assert rel(s, "For:iter->body") == [(5, 12, 14)]
    assert text(s, "For:for->iter") == [("for", "enumerate ( xs")]
    # the loop's else block has no For relation, only a children edge
    assert (0, 21, 21) in rel(s, "children:parent->child") and s.tokens[21] == "pass"


def test_while():
    s = extract("while n > 0:\n    n -= 1\n    m = n\n")
    assert rel(s, "While:while->test") == [(0, 1, 3)]
    assert rel(s, "While:while->body") == [(0, 7, 13)]
    assert rel(s, "While:test->body") == [(1, 7, 13)]
    assert text(s, "While:while->body") == [("while", "n -= 1 \n m = n")]
    assert rel(s, "Compare:left->comparator") == [(1, 3, 3)]
    assert rel(s, "AugAssign:target->value") == [(7, 9, 9)]


def test_call_func_args_keywords():
    s = extract("r = re.findall(p, t, flags=0, **kw)\n")
    # the head of Call relations is the LAST token of func (findall), as the authors did
    assert rel(s, "Call:func->args") == [(4, 6, 8)]
    assert rel(s, "Call:func->keywords") == [(4, 10, 15)]
    assert rel(s, "Call:args->keywords") == [(6, 10, 15)]  # head: last token of args[0]
    assert text(s, "Call:func->keywords") == [("findall", "flags = 0 , ** kw")]
    s2 = extract("f()\ng(k=1)\n")
    assert rel(s2, "Call:func->args") == [] and rel(s2, "Call:args->keywords") == []
    assert rel(s2, "Call:func->keywords") == [(4, 6, 8)]


def test_assign_and_augassign():
    s = extract("a[i] = b = c\ns += x * 2\n")
    assert rel(s, "Assign:target->value") == [(0, 7, 7)]  # targets[0] -> value
    assert rel(s, "AugAssign:target->value") == [(9, 11, 13)]
    assert text(s, "AugAssign:target->value") == [("s", "x * 2")]
    assert rel(s, "Subscript:value->slice") == [(0, 2, 2)]


def test_attribute():
    s = extract("v = a.b.c(d)\n")
    assert rel(s, "Attribute:value->attr") == [(2, 6, 6), (2, 4, 4)]  # a -> c (outer), a -> b
    assert text(s, "Attribute:value->attr") == [("a", "c"), ("a", "b")]
    assert rel(s, "Call:func->args") == [(6, 8, 8)]


def test_binop_boolop_compare():
    s = extract("while a and b or c and not d:\n    v = x if 0 < x <= 9 else (y - 1) * z\n")
    assert rel(s, "BoolOp:value->value") == [(1, 5, 8), (1, 3, 3), (5, 7, 8)]  # values[0] -> values[1] only
    assert text(s, "BoolOp:value->value") == [("a", "c and not d"), ("a", "b"), ("c", "not d")]
    assert rel(s, "Compare:left->comparator") == [(16, 18, 20)]  # all comparators in one span
    # (y - 1) * z: left starts at "(", which is stepped over
    assert rel(s, "BinOp:left->right") == [(23, 28, 28), (23, 25, 25)]
    assert rel(s, "IfExp:body->test") == [(14, 16, 20)]
    assert rel(s, "IfExp:test->orelse") == [(16, 23, 28)]
    assert rel(s, "IfExp:body->orelse") == [(14, 23, 28)]


def test_try():
    code = "try:\n    a()\nexcept E as e:\n    b\nexcept F:\n    c\nelse:\n    d\n    d2\nfinally:\n    f\n"
    s = extract(code)
    assert (s.tokens[9], s.tokens[19], s.tokens[31], s.tokens[33], s.tokens[40]) == ("except", "except", "d", "d2", "f")
    assert rel(s, "Try:body->handler") == [(4, 9, 24)]  # all handlers, from the first except
    assert rel(s, "Try:handler->orelse") == [(9, 31, 33)]  # the whole else block (deviation, see module doc)
    assert rel(s, "Try:handler->finalbody") == [(9, 40, 40)]
    assert rel(s, "Try:body->orelse") == [(4, 31, 33)]
    assert rel(s, "Try:body->finalbody") == [(4, 40, 40)]
    only_finally = extract("try:\n    a\nfinally:\n    f\n")
    assert rel(only_finally, "Try:body->handler") == [] and rel(only_finally, "Try:body->finalbody") == [(4, 11, 11)]


def test_ifexp_simple():
    s = extract("y = p if q else r\n")
    assert rel(s, "IfExp:body->test") == [(2, 4, 4)]
    assert rel(s, "IfExp:test->orelse") == [(4, 6, 6)]
    assert rel(s, "IfExp:body->orelse") == [(2, 6, 6)]


def test_dict_subscript_slice():
    s = extract('z = {a: 1, **m, "b": c}[k][1:n]\n')
    assert rel(s, "Dict:key->value") == [(3, 5, 5), (10, 12, 12)]  # **m has no key
    assert text(s, "Dict:key->value") == [("a", "1"), ('"b"', "c")]
    # the dict's first token "{" is stepped over, so the head of both subscripts is "a"
    assert rel(s, "Subscript:value->slice") == [(3, 18, 20), (3, 15, 15)]
    assert rel(s, "Slice:lower->upper") == [(18, 20, 20)]
    assert rel(extract("x[:n]\n"), "Slice:lower->upper") == []


def test_with():
    s = extract("with open(p) as f, g:\n    t = f.read()\n")
    assert rel(s, "With:item->body") == [(1, 12, 17)]
    assert text(s, "With:item->body") == [("open", "t = f . read (")]  # last token of f.read() is "("


def test_comprehensions():
    s = extract("y = [x * 2 for x in xs if x]\n")
    assert rel(s, "ListComp:elt->generator") == [(3, 7, 9)]  # target..iter of the generators, no if clause
    assert rel(s, "comprehension:target->iter") == [(7, 9, 9)]
    s = extract("t = sum(x for x in y), {e for e in s}\n")
    assert rel(s, "GeneratorExp:elt->generator") == [(4, 6, 8)]
    assert rel(s, "SetComp:elt->generator") == [(12, 14, 16)]
    assert rel(s, "comprehension:target->iter") == [(6, 8, 8), (14, 16, 16)]
    s = extract("d = {k: v for k, v in p for q in v}\n")
    assert rel(s, "DictComp:key->value") == [(3, 5, 5)]
    assert rel(s, "DictComp:key->generator") == [(3, 7, 15)]  # first target .. last iter
    assert rel(s, "DictComp:value->generator") == [(5, 7, 15)]
    assert rel(s, "comprehension:target->iter") == [(7, 11, 11), (13, 15, 15)]


def test_children_and_function_definitions():
    code = '@dec(1)\ndef f(a, b=g(2)) -> T:\n    """doc"""\n    def h(x=1):\n        return x\n    return h\n'
    s = extract(code)
    # decorators, defaults and annotations are not visited; no edge from or to a def; only the bodies
    assert rel(s, "children:parent->child") == [(35, 36, 36), (39, 40, 40)]
    assert text(s, "children:parent->child") == [("return", "x"), ("return", "h")]
    assert nonempty(s) == {"children:parent->child"}
    cls = extract("class C(B):\n    x = 1\n")
    assert text(cls, "children:parent->child") == [("class", "B"), ("class", "x = 1"), ("x", "1")]


def test_non_ascii_spans_are_characters():
    code = 'größe = "ü€𝄞" + naïve.wert(ä=1)\nif größe:\n    x = größe[1:ñ]\n'
    ascii_code = 'gross = "uuuu" + naive.wert(a=1)\nif gross:\n    x = gross[1:n]\n'
    s, a = extract(code), extract(ascii_code)
    check_spans(s)
    assert s.spans[2] == (8, 13) and s.tokens[2] == '"ü€𝄞"'  # characters, not UTF-8 bytes
    assert len(s.tokens) == len(a.tokens)
    assert s.relns == a.relns  # byte columns converted: same edges as the ASCII twin
    assert text(s, "Attribute:value->attr") == [("naïve", "wert")]
    assert text(s, "Slice:lower->upper") == [("1", "ñ")]


def test_fstring_is_one_token():
    s = extract('x = f"a{b!r:>{w}}{{c}}" + g(f"{z}")\n')
    assert s.tokens[:4] == ("x", "=", 'f"a{b!r:>{w}}{{c}}"', "+")
    assert rel(s, "BinOp:left->right") == [(2, 4, 6)]
    assert rel(s, "Call:func->args") == [(4, 6, 6)]
    check_spans(s)


def test_tabs():
    code = "if a:\n\tb\t=\t[1,\n\t\t2]\n"
    s = extract(code)
    check_spans(s)
    assert s.tokens[4] == "\t" and s.spans[4] == (6, 7)
    assert s.relns == extract("if a:\n    b = [1,\n            2]\n").relns
    assert rel(s, "Assign:target->value") == [(5, 8, 10)]


def test_crlf():
    code = IF_CODE.replace("\n", "\r\n")
    s = extract(code)
    check_spans(s)
    assert s.tokens[3] == "\r\n" and s.spans[3] == (5, 7)
    assert s.relns == extract(IF_CODE).relns
    with pytest.raises(CodeParseError, match="carriage return"):
        extract("x = 1\ry = 2\n")


def test_every_relation_covered_and_forward():
    s = extract(BIG)
    check_forward(s)
    check_spans(s)
    assert nonempty(s) == set(RELATIONS)


def test_syntax_errors(caplog):
    with pytest.raises(CodeParseError, match="line 1") as info:
        extract("def f(:\n    pass\n")
    assert isinstance(info.value, ValueError) and isinstance(info.value, InputError)
    assert isinstance(info.value.__cause__, SyntaxError)
    with pytest.raises(CodeParseError, match="unexpected indent"):
        extract("    x = 1\n")
    with caplog.at_level(logging.WARNING, logger="probes.codesyntax.relations"):
        out = extract_many(["x = 1\n", "x = (\n", "y = 2\n", "if:\n"])
    assert [s.code for s in out] == ["x = 1\n", "y = 2\n"]
    warnings = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1 and "skipped 2 of 4" in warnings[0].getMessage()
    with pytest.raises(CodeParseError, match="snippet 1"):
        extract_many(["x = 1\n", "x = (\n"], skip_errors=False)
