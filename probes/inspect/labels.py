"""Labels and mutations of Python functions for the INSPECT tasks (definitions in :mod:`probes.inspect.tasks`).

Pure functions over one function's source: code tokens with character spans (``tokenize``), the
metric labels (distinct operators and variables, code structures, nesting depth, decision points,
NPath), identifier kinds, and the single-token mutations of the incorrect-code tasks.
"""

from __future__ import annotations

import ast
import builtins
import keyword
import re
import sys
import tokenize

import numpy as np

from asc.errors import InputError
from probes.pyast import child_nodes, walk
from probes.pytokens import PyToken, python_tokens

__all__ = ["ASSIGNMENT", "BUILTIN_TYPES", "KTX_CLASSES", "LEN_BINS", "NPT_BINS", "RELATIONAL", "code_structures",
           "code_tokens", "decision_points", "identifier_kinds", "max_depth", "mutate", "mutation_sites", "npath",
           "unique_operators", "unique_variables"]

IDN_CLASSES = ("class", "function", "module", "variable")
KTX_CLASSES: dict[str, tuple[str, ...]] = {
    "kw_definition": ("def", "class", "lambda", "global", "nonlocal", "del", "async", "await"),
    "kw_exception": ("try", "except", "finally", "raise", "assert", "with"),
    "kw_flow": ("if", "elif", "else", "for", "while", "break", "continue", "return", "pass", "yield"),
    "kw_module": ("import", "from", "as"),
    "op_arithmetic": ("+", "-", "*", "/", "//", "%", "**", "@"),
    "op_assignment": ("=", "+=", "-=", "*=", "/=", "//=", "%=", "**=", "@=", "&=", "|=", "^=", ">>=", "<<=", ":="),
    "op_bitwise": ("&", "|", "^", "~", "<<", ">>"),
    "op_logical": ("and", "or", "not", "in", "is"),
    "op_relational": ("==", "!=", "<", ">", "<=", ">="),
    "symbol": ("(", ")", "[", "]", "{", "}", ":", ",", ".", ";", "->"),
}
KTX_OF = {tok: cls for cls, toks in KTX_CLASSES.items() for tok in toks}
_SCK_GROUPS = {cls: toks for cls, toks in KTX_CLASSES.items() if cls.startswith("kw_") or cls == "op_logical"}
BUILTIN_TYPES = ("int", "str", "float", "bool", "list", "dict", "set", "tuple", "bytes", "object", "complex",
                 "frozenset", "bytearray", "type", "range", "memoryview", "slice")
RELATIONAL = KTX_CLASSES["op_relational"]
ASSIGNMENT = tuple(op for op in KTX_CLASSES["op_assignment"] if op != ":=")
LEN_BINS = ((0, 30, "0-30"), (31, 45, "31-45"), (46, 65, "46-65"), (66, 110, "66-110"), (111, 10 ** 9, "111+"))
NPT_BINS = ((1, 1, "1"), (2, 2, "2"), (3, 3, "3"), (4, 6, "4-6"), (7, 8, "7-8"), (9, 10, "9-10"), (11, 15, "11-15"),
            (16, 20, "16-20"), (21, 30, "21-30"), (31, 100, "31-100"))

# ---------------------------------------------------------------------------------------------- parsing helpers
_CODE_KINDS = {tokenize.NAME, tokenize.NUMBER, tokenize.STRING, tokenize.OP}
_Function = ast.FunctionDef | ast.AsyncFunctionDef  # a snippet's function, see function_node


def code_token_list(source: str) -> list[PyToken] | None:
    """Code tokens (NAME, NUMBER, STRING, OP) with character spans; None when tokenize fails."""
    try:
        return [t for t in python_tokens(source) if t.kind in _CODE_KINDS]
    except (tokenize.TokenError, SyntaxError):
        return None


def function_node(source: str) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    """The snippet's function (its first statement) or None when it does not parse or is no function."""
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError):
        return None
    first = tree.body[0] if tree.body else None
    return first if isinstance(first, (ast.FunctionDef, ast.AsyncFunctionDef)) else None


def _as_function(source_or_node):
    return function_node(source_or_node) if isinstance(source_or_node, str) else source_or_node


def _leaf(node) -> str | None:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None


# ---------------------------------------------------------------------------------------------- label functions
def code_tokens(source: str) -> int:
    """LEN: number of code tokens (NAME, NUMBER, STRING, OP) by tokenize; -1 when tokenize fails."""
    toks = code_token_list(source)
    return -1 if toks is None else len(toks)


_OPERATORS = frozenset(tok for cls, toks in KTX_CLASSES.items() if cls.startswith("op_") for tok in toks)


def unique_operators(source: str) -> set[str]:
    """OCU: distinct operator tokens (the five KTX operator classes) among the function's code tokens."""
    return {t.string for t in code_token_list(source) or () if t.string in _OPERATORS and t.kind != tokenize.STRING}


def unique_variables(source: str | _Function) -> set[str]:
    """VCU: distinct names bound in the function: parameters and Name targets, minus def/class/import names."""
    return _variables(walk(_as_function(source)))


def _variables(nodes: list[ast.AST]) -> set[str]:
    """:func:`unique_variables` of a function given as its nodes (:func:`probes.pyast.walk`)."""
    names: set[str] = set()
    other: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            other.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            other.update((a.asname or a.name).split(".")[0] for a in node.names)
    return names - other


_STRUCTURES = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.Try, ast.With, ast.AsyncWith, ast.Match,
               getattr(ast, "TryStar", ast.Try))


def code_structures(source: str | _Function) -> int:
    """CSC: number of if (each elif counts), for, while, try, with and match statements, nested defs included."""
    return sum(isinstance(node, _STRUCTURES) for node in walk(_as_function(source)))


def _is_elif(parent: ast.If, lines: list[bytes] | None) -> bool:
    if len(parent.orelse) != 1 or not isinstance(parent.orelse[0], ast.If):
        return False
    child = parent.orelse[0]
    if lines is None:  # no source: ast cannot tell `elif` from `else: if`, assume elif
        return True
    return lines[child.lineno - 1][child.col_offset:].startswith(b"elif")


def _depth(stmts, depth: int, lines) -> int:
    best = depth if stmts else depth - 1
    for s in stmts:
        best = max(best, depth)
        if isinstance(s, ast.If) and _is_elif(s, lines):
            best = max(best, _depth(s.body, depth + 1, lines), _depth(s.orelse, depth, lines))
            continue
        if isinstance(s, ast.Match):
            best = max([best] + [_depth(c.body, depth + 2, lines) for c in s.cases])
        for key in ("body", "orelse", "finalbody"):
            if isinstance(getattr(s, key, None), list):
                best = max(best, _depth(getattr(s, key), depth + 1, lines))
        for handler in getattr(s, "handlers", ()):
            best = max(best, _depth(handler.body, depth + 1, lines))
    return best


def max_depth(source: str, func: _Function | None = None) -> int:
    """MXN: deepest statement nesting; the function body is 1, `elif` stays at its `if`'s level."""
    func = function_node(source) if func is None else func
    assert func is not None, "max_depth needs a snippet that parses as a function"
    lines = source.encode("utf-8").split(b"\n")
    return _depth(func.body, 1, lines)


def decision_points(source: str | _Function) -> int:
    """CPX: McCabe decision points (CCN - 1): if/elif, ternary, for, while, except, comprehension for/if,
    each extra `and`/`or` operand, match case; nested functions included."""
    total = 0
    for node in walk(_as_function(source)):
        if isinstance(node, ast.If | ast.IfExp | ast.For | ast.AsyncFor | ast.While | ast.ExceptHandler
                      | ast.match_case):
            total += 1
        elif isinstance(node, ast.comprehension):
            total += 1 + len(node.ifs)
        elif isinstance(node, ast.BoolOp):
            total += len(node.values) - 1
    return total


def _bool_ops(node) -> int:
    if node is None:
        return 0
    return sum(len(n.values) - 1 for n in walk(node) if isinstance(n, ast.BoolOp))


def _np_expr(node) -> int:
    """A conditional expression's paths; any other node's: the product of its children's, that is of the
    outermost conditional expressions below it (found without recursing per node)."""
    if isinstance(node, ast.IfExp):
        return _bool_ops(node.test) + _np_expr(node.body) + _np_expr(node.orelse)
    result = 1
    stack = child_nodes(node)
    while stack:
        child = stack.pop()
        if isinstance(child, ast.IfExp):
            result *= _np_expr(child)
        else:
            stack += child_nodes(child)
    return result


def _np_block(stmts) -> int:
    result = 1
    for s in stmts:
        result *= _np_stmt(s)
    return result


def _np_stmt(s) -> int:
    if isinstance(s, ast.If | ast.While):
        return _bool_ops(s.test) + _np_block(s.body) + (_np_block(s.orelse) if s.orelse else 1)
    if isinstance(s, ast.For | ast.AsyncFor):
        return _np_block(s.body) + (_np_block(s.orelse) if s.orelse else 1)
    if isinstance(s, ast.Try | getattr(ast, "TryStar", ast.Try)):
        return (_np_block(s.body) + sum(_np_block(h.body) for h in s.handlers)
                + (_np_block(s.orelse) if s.orelse else 0) + (_np_block(s.finalbody) if s.finalbody else 0))
    if isinstance(s, ast.With | ast.AsyncWith):
        return _np_block(s.body)
    if isinstance(s, ast.Match):
        wildcard = any(isinstance(c.pattern, ast.MatchAs) and c.pattern.pattern is None and c.guard is None
                       for c in s.cases)
        return (_bool_ops(s.subject) + sum(_bool_ops(c.guard) + _np_block(c.body) for c in s.cases)
                + (0 if wildcard else 1))
    if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return 1
    if isinstance(s, ast.Return):
        ternary = _np_expr(s.value) if s.value is not None else 1
        return max(1, _bool_ops(s.value) + (ternary if ternary > 1 else 0))
    return _np_expr(s)


def npath(source: str | _Function) -> int:
    """NPT: NPath complexity (Nejmeh 1988, PMD rules adapted to Python; see the module docstring)."""
    return _np_block(_as_function(source).body)


_CAPWORDS = re.compile(r"_*[A-Z]\w*[a-z]\w*")  # a call of such a name is a class's
_LOWER = re.compile(r"_*[a-z]\w*")  # ... of such a name a function's


def identifier_kinds(source: str | _Function) -> dict[str, set[str]]:
    """IDN harvest of one function: identifiers seen as module, class, function and variable names."""
    nodes = walk(_as_function(source))  # walked once for the three passes below
    kinds: dict[str, set[str]] = {k: set() for k in IDN_CLASSES}
    variables = _variables(nodes)
    kinds["variable"] |= variables
    imported: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            for a in node.names:
                kinds["module"].add(a.name)
                if a.asname:
                    kinds["module"].add(a.asname)
                imported.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module:
            kinds["module"].add(node.module)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            kinds["function"].add(node.name)
        elif isinstance(node, ast.ClassDef):
            kinds["class"].add(node.name)
            kinds["class"].update(filter(None, map(_leaf, node.bases)))
        elif isinstance(node, ast.ExceptHandler) and node.type is not None:
            types = node.type.elts if isinstance(node.type, ast.Tuple) else [node.type]
            kinds["class"].update(filter(None, map(_leaf, types)))
        elif isinstance(node, ast.Raise) and node.exc is not None:
            name = _leaf(node.exc.func if isinstance(node.exc, ast.Call) else node.exc)
            if name and name[0].isupper():
                kinds["class"].add(name)
        elif isinstance(node, ast.Call):
            name = _leaf(node.func)
            if name in ("isinstance", "issubclass") and len(node.args) == 2:
                arg = node.args[1]
                kinds["class"].update(filter(None, map(_leaf, arg.elts if isinstance(arg, ast.Tuple) else [arg])))
            if name is None:
                continue
            if isinstance(getattr(builtins, name, None), type) or _CAPWORDS.fullmatch(name):
                kinds["class"].add(name)
            elif _LOWER.fullmatch(name):
                kinds["function"].add(name)
    for node in nodes:
        if isinstance(node, ast.Attribute):
            base = node.value
            while isinstance(base, ast.Attribute):
                base = base.value
            if isinstance(base, ast.Name) and (base.id in imported or base.id in sys.stdlib_module_names
                                               and base.id not in variables):
                kinds["module"].add(base.id)
    return kinds


# ---------------------------------------------------------------------------------------------- mutations
def _header_end(toks: list[PyToken]) -> int:
    """Index of the first token after the leading `async`/`def` keywords (never mutated by SRK/SCK)."""
    i = 0
    while i < len(toks) and toks[i].string in ("async", "def"):
        i += 1
    return i


def _misspellings(word: str, taken: set[str]) -> list[str]:
    out = {word[:i] + word[i + 1] + word[i] + word[i + 2:] for i in range(len(word) - 1)}
    out |= {word[:i] + word[i + 1:] for i in range(len(word))} if len(word) > 2 else set()
    out |= {word[:i] + word[i] + word[i:] for i in range(len(word))}
    return sorted(w for w in out if w != word and w not in taken and not keyword.iskeyword(w)
                  and not hasattr(builtins, w))


def mutation_sites(task: str, source: str, toks: list[PyToken] | None = None,
                   func: _Function | None = None) -> list[tuple]:
    """Where ``task`` (TYP, REA, JBL, SRI, SRK, SCK) can mutate ``source``: (token index, replacements) pairs,
    or for JBL (index of the first of two tokens, ()). Empty when the mutation is impossible."""
    toks = code_token_list(source) if toks is None else toks
    if not toks:
        return []
    if task == "TYP":
        func = function_node(source) if func is None else func
        assert func is not None, "TYP sites need a snippet that parses as a function"
        lines = source.split("\n")
        where = {(n.lineno, n.col_offset) for n in walk(func) if isinstance(n, ast.Name) and n.id in BUILTIN_TYPES}
        taken = {t.string for t in toks if t.kind == tokenize.NAME}
        sites = [(i, tuple(_misspellings(t.string, taken))) for i, t in enumerate(toks)
                 if t.kind == tokenize.NAME and (t.row, len(lines[t.row - 1][:t.col].encode("utf-8"))) in where]
    elif task == "REA":
        sites = [(i, ASSIGNMENT) for i, t in enumerate(toks) if t.kind == tokenize.OP and t.string in RELATIONAL]
    elif task == "JBL":
        sites = [(i, ()) for i, (a, b) in enumerate(zip(toks, toks[1:]))
                 if a.string != b.string and source.count("\n", a.end, b.start) == 0]
    elif task == "SRI":
        names = sorted({t.string for t in toks if t.kind == tokenize.NAME and not keyword.iskeyword(t.string)})
        sites = [(i, tuple(n for n in names if n != t.string)) for i, t in enumerate(toks)
                 if t.kind == tokenize.NAME and not keyword.iskeyword(t.string)]
    elif task == "SRK":
        sites = [(i, tuple(k for k in keyword.kwlist if k != t.string)) for i, t in enumerate(toks)
                 if i >= _header_end(toks) and t.kind == tokenize.NAME and keyword.iskeyword(t.string)]
    elif task == "SCK":
        group = {tok: toks_ for toks_ in _SCK_GROUPS.values() for tok in toks_}
        sites = [(i, tuple(k for k in group[t.string] if k != t.string)) for i, t in enumerate(toks)
                 if i >= _header_end(toks) and t.kind == tokenize.NAME and t.string in group]
    else:
        raise InputError(f"no mutation for task {task!r}: use one of TYP, REA, JBL, SRI, SRK, SCK")
    return [s for s in sites if task == "JBL" or s[1]]


def mutate(task: str, source: str, rng: np.random.Generator, sites: list[tuple] | None = None,
           toks: list[PyToken] | None = None) -> str | None:
    """One random mutation of ``source`` for ``task`` (spans from tokenize, never in strings or comments)."""
    toks = code_token_list(source) if toks is None else toks
    sites = mutation_sites(task, source, toks) if sites is None else sites
    if not sites:
        return None
    assert toks is not None, "sites index tokens, so the source tokenizes"
    i, replacements = sites[int(rng.integers(len(sites)))]
    a = toks[i]
    if task == "JBL":
        b = toks[i + 1]
        return source[:a.start] + b.string + source[a.end:b.start] + a.string + source[b.end:]
    return source[:a.start] + replacements[int(rng.integers(len(replacements)))] + source[a.end:]
