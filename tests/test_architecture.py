"""The architecture's rules, checked on the source: one place for each policy, and no dead weight.

Each test reads the code (``ast``), so a change that breaks a rule fails here with the file and line:
writes go through ``write_atomic``; ``os.environ`` is read in ``asc/paths.py`` only; no private name
crosses a module boundary; every module has a docstring, stays under ``MAX_LINES`` and appears in the
folder tree of docs/folders.md (path for path); public backend functions are typed; ``__all__`` lists names that
exist; one exported constant name has one meaning; no variable is assigned and never read.
"""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BACKEND = ("asc", "probes")
PACKAGES = ("asc", "probes", "ui")
MAX_LINES = 450


def _files(*tops: str) -> list[Path]:
    out: list[Path] = []
    for top in tops:
        path = ROOT / top
        out += [path] if path.suffix == ".py" else sorted(path.rglob("*.py"))
    return out


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


ALL_CODE = _files("asc", "probes", "ui", "pages", "app.py")
WRITERS = re.compile(r"\.(write_text|write_bytes|to_csv|to_parquet)\(|np\.save\w*\(|json\.dump\(|"
                     r"open\([^)]*['\"][wa]b?['\"]")


def test_every_result_file_is_written_atomically():
    """A write call must sit in a ``write_atomic(path, lambda tmp: ...)`` (readers poll these files)."""
    # the de-quantized model is written into a temporary folder that is then os.replace()d as a whole
    # and a run's Parquet part is serialized into memory (to ship it from a Ray actor) before write_atomic writes it
    allowed = {("asc/models.py", "save_pretrained"), ("asc/models.py", "asc-source.json"),
               ("asc/corpus/tables.py", "to_parquet(buf, "), ("asc/corpus/depth.py", "to_parquet(buf, ")}
    bad = []
    for path in _files(*BACKEND):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if not WRITERS.search(line) or "lambda" in line or "sys.stdout" in line or line.lstrip().startswith("#"):
                continue
            if any(_rel(path) == f and key in line for f, key in allowed):
                continue
            bad.append(f"{_rel(path)}:{n}: {line.strip()}")
    assert not bad, "write through asc.atomic.write_atomic:\n" + "\n".join(bad)


def test_environment_is_read_in_asc_paths_only():
    bad = []
    for path in ALL_CODE:
        if _rel(path) == "asc/paths.py":
            continue
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"os\.environ|os\.getenv|getenv\(", line) and "TOKENIZERS_PARALLELISM" not in line:
                bad.append(f"{_rel(path)}:{n}: {line.strip()}")
    assert not bad, "read environment variables through asc.paths:\n" + "\n".join(bad)


#: The model adapter, the one place that names a model's insides (issue 45, 1), and what it alone may name: the
#: parts whose names differ between families, the config keys that size a model, the KV cache and the log-softmax.
ADAPTER = ("asc/arch.py", "asc/kvcache.py")
INSIDES = {
    "a final norm": r"\b(final_layer_norm|final_layernorm|norm_f|ln_f)\b|\.model\.norm\b",
    "a logit softcap or scale": r"softcap|logit_scale|logits_scaling",
    "a decoder-layer attribute": r"\.(model|transformer|gpt_neox|decoder|language_model)\.(layers|h|blocks)\b"
                                 r"|\b(num_hidden_layers|n_layer)\b",
    "the embeddings or the head": r"get_input_embeddings|get_output_embeddings"
                                  r"|\b(lm_head|embed_tokens|wte|base_model)\b",
    "the config's shape": r"get_text_config|\btext_config\b|\.vocab_size\b|max_position_embeddings",
    "a KV cache": r"DynamicCache|past_key_values|batch_repeat_interleave|batch_select_indices|logits_to_keep",
    "a log-softmax": r"log_softmax",
    "every layer's hidden states": r"output_hidden_states",
}


def _code_lines(text: str) -> list[str]:
    """``text``'s lines with comments and docstrings (string statements) blanked: what the code itself names."""
    import io
    import tokenize

    lines = text.splitlines()
    spans = [(n.lineno, n.col_offset, n.end_lineno, n.end_col_offset) for n in ast.walk(ast.parse(text))
             if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)]
    spans += [(*t.start, *t.end) for t in tokenize.generate_tokens(io.StringIO(text).readline)
              if t.type == tokenize.COMMENT]
    for first, col, last, end in spans:
        for n in range(first, (last or first) + 1):
            a = col if n == first else 0
            b = end if n == last else len(lines[n - 1])
            lines[n - 1] = lines[n - 1][:a] + " " * (b - a) + lines[n - 1][b:]
    return lines


def _insides_named(rel: str, text: str) -> list[str]:
    return [f"{rel}:{n}: {what}: {line.strip()}" for n, line in enumerate(_code_lines(text), 1)
            for what, pattern in INSIDES.items() if re.search(pattern, line)]


def test_only_the_model_adapter_names_a_models_insides():
    """Scores, the lens, attribution, patching, branches and the probes ask :mod:`asc.arch` (and :mod:`asc.kvcache`)
    for a model's layers, final norm, head, softcap, embeddings, config sizes, KV cache and log-probabilities."""
    caught = _insides_named("example.py", '"""model.model.layers: a docstring may say it."""\n'
                            "h = model.model.layers[0]  # so may a comment: ln_f\nnorm = model.transformer.ln_f\n"
                            'cap = getattr(cfg, "final_logit_softcapping")\nlp = logits.log_softmax(-1)\n')
    assert [c.split(": ")[1] for c in caught] == ["a decoder-layer attribute", "a final norm",
                                                  "a logit softcap or scale", "a log-softmax"]
    bad = [hit for path in _files(*PACKAGES) if _rel(path) not in ADAPTER
           for hit in _insides_named(_rel(path), path.read_text())]
    assert not bad, "ask the model adapter (asc.arch, asc.kvcache) instead:\n" + "\n".join(bad)


def test_no_private_name_is_imported_across_modules():
    bad = []
    for path in ALL_CODE:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES:
                for alias in node.names:
                    if alias.name.startswith("_") and not alias.name.startswith("__"):
                        bad.append(f"{_rel(path)}:{node.lineno}: from {node.module} import {alias.name}")
    assert not bad, "make the name public (documented) or keep it in its module:\n" + "\n".join(bad)


@pytest.mark.parametrize("path", ALL_CODE, ids=_rel)
def test_module_has_a_docstring_and_one_concern_sized_body(path):
    text = path.read_text()
    assert ast.get_docstring(ast.parse(text)), f"{_rel(path)}: say what the module computes in a docstring"
    assert len(text.splitlines()) <= MAX_LINES, f"{_rel(path)}: over {MAX_LINES} lines; split it by concern"


def test_code_cites_papers_by_name_not_files_outside_the_repository():
    bad = []
    for path in ALL_CODE:
        for n, line in enumerate(path.read_text().splitlines(), 1):
            if re.search(r"reference\.md|shared/papers|\.\./shared|papers/[\w-]+\.txt", line):
                bad.append(f"{_rel(path)}:{n}: {line.strip()}")
    assert not bad, "cite the paper or section by name (those files are not in the repository):\n" + "\n".join(bad)


def _public_functions(tree: ast.Module):
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and not node.name.startswith("_"):
            yield node.name, node
        elif isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and not item.name.startswith("_"):
                    yield f"{node.name}.{item.name}", item


def test_public_backend_functions_are_typed():
    bad = []
    for path in _files(*BACKEND):
        for name, fn in _public_functions(ast.parse(path.read_text())):
            args = fn.args.posonlyargs + fn.args.args + fn.args.kwonlyargs
            args += [a for a in (fn.args.vararg, fn.args.kwarg) if a is not None]
            untyped = [a.arg for a in args if a.annotation is None and a.arg not in ("self", "cls")]
            if untyped or fn.returns is None:
                bad.append(f"{_rel(path)}:{fn.lineno}: {name}({', '.join(untyped)})"
                           + ("" if fn.returns else " -> ?"))
    assert not bad, "annotate parameters and return types:\n" + "\n".join(bad)


def _modules(*tops: str) -> list[str]:
    return [_module_name(p) for p in _files(*tops) if not p.name == "__main__.py"]


@pytest.mark.parametrize("name", _modules(*BACKEND), ids=str)
def test_all_lists_names_that_exist(name):
    module = importlib.import_module(name)
    names = getattr(module, "__all__", [])
    assert len(names) == len(set(names)), f"{name}.__all__ has a name twice"
    missing = [n for n in names if not hasattr(module, n)]
    assert not missing, f"{name}.__all__ lists {missing}, which the module does not define"


def test_one_exported_constant_name_has_one_meaning():
    seen: dict[str, tuple[str, object]] = {}
    clashes = []
    for name in _modules(*BACKEND):
        module = importlib.import_module(name)
        for const in getattr(module, "__all__", []):
            if not const.isupper():
                continue
            value = getattr(module, const)
            if const in seen and seen[const][1] is not value and seen[const][1] != value:
                clashes.append(f"{const}: {seen[const][0]} and {name}")
            seen.setdefault(const, (name, value))
    assert not clashes, "give each meaning its own name:\n" + "\n".join(clashes)


MUTATORS = {"append", "extend", "add", "insert", "appendleft"}  # not "update": st.status().update() shows


class _Scope(ast.NodeVisitor):
    """Names stored and loaded in one function (or module) body, not descending into nested functions."""

    def __init__(self) -> None:
        self.stored: dict[str, int] = {}
        self.loaded: set[str] = set()

    def visit_FunctionDef(self, node: ast.AST) -> None:  # nested scopes are checked on their own
        for dec in getattr(node, "decorator_list", []):
            self.visit(dec)

    visit_AsyncFunctionDef = visit_FunctionDef
    visit_ClassDef = visit_FunctionDef

    def visit_Lambda(self, node: ast.Lambda) -> None:
        self.visit(node.body)

    def visit_Expr(self, node: ast.Expr) -> None:
        """``xs.append(v)`` as a statement only fills ``xs``: it does not count as reading it."""
        call = node.value
        if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and isinstance(call.func.value, ast.Name) and call.func.attr in MUTATORS):
            for arg in [*call.args, *(k.value for k in call.keywords)]:
                self.visit(arg)
            return
        self.generic_visit(node)

    def visit_Name(self, node: ast.Name) -> None:
        if isinstance(node.ctx, ast.Store):
            self.stored.setdefault(node.id, node.lineno)
        else:
            self.loaded.add(node.id)


def _closures(tree: ast.AST, body: list[ast.stmt]) -> set[str]:
    """Names loaded in functions and lambdas nested in ``body`` (they read their parents' variables)."""
    out: set[str] = set()
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                out |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}
    return out


def test_no_variable_is_assigned_and_never_read():
    bad = []
    for path in ALL_CODE:
        tree = ast.parse(path.read_text())
        bodies: list[tuple[str, list[ast.stmt]]] = [("<module>", tree.body)] if path.parts[-2] == "pages" else []
        bodies += [(n.name, n.body) for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
        for where, body in bodies:
            scope = _Scope()
            for stmt in body:
                scope.visit(stmt)
            globals_ = {name for stmt in body for node in ast.walk(stmt)
                        if isinstance(node, (ast.Global, ast.Nonlocal)) for name in node.names}
            nested = _closures(tree, body)
            for name, line in scope.stored.items():
                if name.startswith("_") or name in scope.loaded or name in globals_ or name in nested:
                    continue
                bad.append(f"{_rel(path)}:{line}: {name!r} in {where} is assigned and never read")
    assert not bad, "remove dead assignments:\n" + "\n".join(bad)


FOLDER_TREE = ROOT / "docs" / "folders.md"  # the docs site's folder-tree page: one line per file


def _readme_tree() -> list[str]:
    """The paths the folder tree of docs/folders.md names, from its indentation (two spaces a level; a name ending in
    ``/`` opens a folder; a line indented deeper than a level below its folder continues the line above)."""
    readme = FOLDER_TREE.read_text(encoding="utf-8")
    section = readme[readme.index("# Folder tree"):]
    block = section[section.index("```text\n") + len("```text\n"):]
    block = block[:block.index("```")]
    folders: list[str] = []
    paths = []
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip(" "))
        depth, name = indent // 2, line.split()[0]
        if indent % 2 or depth > len(folders):
            continue  # a continuation of the line above
        folders = folders[:depth]
        paths.append("/".join([*folders, name.rstrip("/")]))
        if name.endswith("/"):
            folders.append(name.rstrip("/"))
    return paths


def test_readme_tree_lists_every_module_by_its_path():
    """Path for path: every module of the repository appears in the folder tree of docs/folders.md at its place (a
    name alone is not enough: several folders hold a ``layers.py``), and every path the tree names exists."""
    listed = _readme_tree()
    missing = [_rel(path) for path in _files("asc", "probes", "ui", "pages", "app.py", "benchmarks", "docs")
               if path.name != "__init__.py" and _rel(path) not in listed]
    assert not missing, ("add a line per file to the folder tree of docs/folders.md, under its folder:\n"
                         + "\n".join(missing))
    absent = [p for p in listed if not (list(ROOT.glob(p)) if "*" in p else (ROOT / p).exists())]
    assert not absent, "the folder tree of docs/folders.md names paths that do not exist:\n" + "\n".join(absent)


def test_no_page_is_named_like_a_package_of_ours():
    """Streamlit puts a page's folder first on ``sys.path`` (AppTest does for ``pages/x.py``), so ``pages/probes.py``
    would be imported in place of the ``probes`` package by any page that runs before it is loaded."""
    clashes = [_rel(path) for path in _files("pages") if path.stem in PACKAGES]
    assert not clashes, "rename the page (its url_path in app.py keeps the address):\n" + "\n".join(clashes)


#: The backend's facades: the packages whose ``__init__`` holds a curated, sorted ``__all__`` (``asc`` and ``probes``
#: stand for their single modules too). The app (ui/, pages/, app.py) imports the backend from these only.
FACADES = ("asc", "asc.why", "asc.corpus", "asc.branching", "asc.viz", "asc.study",
           "probes", "probes.inspect", "probes.codesyntax", "probes.gluecode", "probes.blanca", "probes.sae")
FACADE_CONTRACT = "ui imports the backend only through its facades"  # pyproject.toml's import-linter contract


def _covers(expression: str, module: str) -> bool:
    """Whether import-linter's module ``expression`` (``*``: one name, ``**``: one or more) forbids ``module``: it
    matches the module or a package above it (the contract treats modules as packages)."""
    parts = [r"[^.]+" if p == "*" else r"[^.]+(?:\.[^.]+)*" if p == "**" else re.escape(p)
             for p in expression.split(".")]
    return re.fullmatch(r"\.".join(parts) + r"(?:\..+)?", module) is not None


def test_the_facade_contract_forbids_every_module_but_the_facades():
    """The import-linter contract's ``forbidden_modules`` cannot drift: every module of asc/ and probes/ that is not a
    facade package (a single module such as ``asc.paths``, the command lines, a package's modules) is forbidden
    to ui, and no facade is."""
    import tomllib

    assert _covers("asc.*.*", "asc.why.attribute") and _covers("asc.cli", "asc.cli.args")
    assert not _covers("asc.*.*", "asc.why") and not _covers("asc.paths", "asc.pathsx")
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    contract = next(c for c in contracts if c["name"] == FACADE_CONTRACT)
    assert contract["type"] == "forbidden" and contract["source_modules"] == ["ui"]
    forbidden = contract["forbidden_modules"]
    modules = [_module_name(path) for path in _files(*BACKEND)]
    allowed = [m for m in modules if m not in FACADES and not any(_covers(e, m) for e in forbidden)]
    assert not allowed, (f"add these modules to forbidden_modules of the contract {FACADE_CONTRACT!r} in "
                         "pyproject.toml (or make the package a facade: FACADES):\n" + "\n".join(allowed))
    blocked = [m for m in FACADES if any(_covers(e, m) for e in forbidden)]
    assert not blocked, f"the contract {FACADE_CONTRACT!r} forbids facades: {blocked}"
    assert set(FACADES) <= set(modules)


def _sort_key(name: str) -> tuple[int, str]:
    """isort's order of an ``__all__`` (ruff's RUF022): constants, then classes, then the rest, each alphabetical."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2), name


@pytest.mark.parametrize("name", FACADES)
def test_each_facade_has_a_curated_sorted_all(name):
    facade = importlib.import_module(name)
    names = list(facade.__all__)
    assert names == sorted(names, key=_sort_key), f"{name}.__all__: sort it (constants, classes, functions)"
    assert not [n for n in names if n.startswith("_")]


def test_the_app_imports_the_backend_through_its_facades_only():
    """Every import of asc or probes in ui/, pages/ and app.py names a facade, and what it takes from it is in the
    facade's ``__all__`` (not a submodule: ``from asc import paths`` is a deep import too). import-linter checks ui/
    (the contract above); pages/ and app.py are no package, so it cannot see them: this test does, for all three."""
    curated = {name: set(importlib.import_module(name).__all__) for name in FACADES}
    bad = []
    for path in _files("ui", "pages", "app.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                deep = [a.name for a in node.names if a.name.split(".")[0] in BACKEND and a.name not in FACADES]
                bad += [f"{_rel(path)}:{node.lineno}: import {name}" for name in deep]
            elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in BACKEND:
                module = node.module or ""
                names = [a.name for a in node.names if module not in FACADES or a.name not in curated[module]]
                bad += [f"{_rel(path)}:{node.lineno}: from {module} import {name}" for name in names]
    assert not bad, ("import the backend from its facades (" + ", ".join(FACADES) + "); a name a facade lacks goes "
                     "into its __all__:\n" + "\n".join(bad))
