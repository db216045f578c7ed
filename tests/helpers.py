"""Helpers shared by several test files (plain functions and constants; fixtures live in conftest.py files).

Import them as ``from tests.helpers import ...``: pytest puts the repository root on ``sys.path``
(``pythonpath = ["."]``), and ``tests`` is a namespace package.
"""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent  # the repository root: app.py, pages/, assets/


# --------------------------------------------------------------------------------------- subprocesses


def run_module(module: str, *args: str, stdin: bytes | None = None, timeout: int = 300,
               env: dict | None = None) -> subprocess.CompletedProcess:
    """``python -m module args...`` from the repository root, offline, as a user runs it (bytes out)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT), **(env or {})}
    return subprocess.run([sys.executable, "-m", module, *args], input=stdin, capture_output=True, env=env,
                          timeout=timeout, cwd=ROOT)


# --------------------------------------------------------------------------------------- session folders


def built_once(request, tmp_path_factory, name: str, build: Callable[[Path], object], copy: bool = True) -> Path:
    """The folder ``name`` made by ``build(folder)`` once per session: under pytest-xdist in the workers' common
    temporary folder, by the first worker that asks (holding a lock the others wait on). With ``copy`` each worker
    gets a copy of its own (in its own temporary folder), which its tests may write into; without, the one folder."""
    base = tmp_path_factory.getbasetemp()
    common = base.parent if hasattr(request.config, "workerinput") else base  # a worker's: the workers' common folder
    shared, done = common / f"{name}-built", common / f"{name}.done"
    with open(common / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not done.exists():
            shutil.rmtree(shared, ignore_errors=True)
            shared.mkdir()
            build(shared)
            done.touch()
    if not copy:
        return shared
    mine = tmp_path_factory.mktemp(name)
    shutil.copytree(shared, mine, dirs_exist_ok=True)
    return mine


def heavy_modules_after_import(package: str, heavy: tuple[str, ...]) -> str:
    """The modules of ``heavy`` that ``import package`` loads in a fresh interpreter (comma-separated)."""
    code = (f"import sys, {package}\n"
            f"print(','.join(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


# --------------------------------------------------------------------------------------- colors


def rgb(color: str) -> tuple[int, int, int]:
    """The channels of a ``rgb(r, g, b)`` color string."""
    m = re.fullmatch(r"rgb\((\d+), ?(\d+), ?(\d+)\)", color)
    assert m, color
    return tuple(int(v) for v in m.groups())


# --------------------------------------------------------------------------------------- alignments
def binding_pairs(alignment) -> tuple[np.ndarray, np.ndarray]:
    """(node, token) of every binding of an :class:`asc.align.Alignment`, node by node, tokens sorted: the pairs
    its ranges stand for (tokens x depth of them for a deep tree: tests only)."""
    counts = alignment.hi - alignment.lo
    tokens = [alignment.order[a:b] for a, b in zip(alignment.lo.tolist(), alignment.hi.tolist(), strict=True)]
    return (np.repeat(np.arange(alignment.n_nodes), counts),
            np.concatenate([*tokens, np.zeros(0, np.int64)]).astype(np.int64))


# --------------------------------------------------------------------------------------- corpus runs

CODE = [
    "def f{i}(x):\n    if x > {i}:\n        return [x, {i}]\n    return x\n",
    "def g{i}(a, b):\n    for k in range(a):\n        b = b + k * {i}\n    return b\n",
]


def corpus_snippets(n: int):
    """``n`` small distinct functions (ids s0..s{n-1}) alternating an if and a for loop."""
    from asc.corpus.sources import Snippet

    return [Snippet(id=f"s{i}", source=CODE[i % 2].format(i=i), name=f"f{i}") for i in range(n)]


# --------------------------------------------------------------------------------------- probes


def toy_task(name: str = "TOY", n: int = 80):
    """Label 1 when the snippet returns, 0 when it prints: visible to a probe even on random weights."""
    from probes.inspect.taskfile import Task

    texts, y = [], []
    for i in range(n):
        if i % 2:
            texts.append(f"def f{i}(x):\n    return x + {i}\n")
        else:
            texts.append(f"def f{i}(x):\n    print(x, {i})\n")
        y.append(i % 2)
    split = np.array((["tr"] * 6 + ["va"] * 2 + ["te"] * 2) * (n // 10))
    return Task(name, ("prints", "returns"), tuple(texts), np.array(y), split)


#: Four small Python functions with if / for / subscript / while relations (attention runs).
ATTENTION_CODES = [
    "def f(x):\n    if x:\n        return x + 1\n    return 0\n",
    "def g(a, b):\n    for i in a:\n        b.append(i)\n    return b\n",
    "def h(d):\n    x = d[1]\n    y = x.z\n    return [i for i in y]\n",
    "def k(q):\n    while q:\n        q = q - 1\n    return q\n",
]

#: CodeSyntax relation snippets: an if/elif/else, and one function with every relation type.
IF_CODE = "if a:\n    b = 1\nelif c:\n    d(x)\nelse:\n    e\n"
BIG = (
    "def f(xs, k=None):\n"
    "    '''Doc.'''\n"
    "    out = {0: xs}\n"
    "    for i, x in enumerate(xs):\n"
    "        if x > 0 and i:\n"
    "            out[x] = [y for y in range(x)]\n"
    "        elif x < -1:\n"
    "            out[x] = {y for y in xs}\n"
    "        else:\n"
    "            out[x] = {y: y + 1 for y in xs}\n"
    "    while k:\n"
    "        k -= 1\n"
    "    try:\n"
    "        with open(k) as fh:\n"
    "            t = fh.read()[1:2]\n"
    "    except OSError:\n"
    "        t = None\n"
    "    else:\n"
    "        t = t\n"
    "    finally:\n"
    "        pass\n"
    "    s = sum(v for v in xs)\n"
    "    return dict(a=1, b=t if s else -s), print(k, sep='')\n"
)


def check_spans(sample) -> None:
    """A CodeSyntax sample's spans locate its tokens in the code, in order."""
    assert len(sample.spans) == len(sample.tokens)
    prev_end = 0
    for tok, (s, e) in zip(sample.tokens, sample.spans, strict=True):
        assert sample.code[s:e] == tok
        assert prev_end <= s <= e
        prev_end = e


# --------------------------------------------------------------------------------------- user study

#: A four-group study on the tiny model for the store and Table III tests.
STORE_STUDY = {
    "id": "store-test", "title": "Store test", "model": "tiny-random", "consent": "I agree.",
    "groups": [{"id": "C", "view": "none"}, {"id": "S1", "view": "sequence"},
               {"id": "S2", "view": "partial"}, {"id": "S3", "view": "complete"}],
    "background": [{"id": "python", "text": "How proficient are you in Python?", "choices": ["Novice", "Expert"]},
                   {"id": "problems", "text": "Problems with code LLMs?", "required": False}],
    "ratings": [{"id": "useful", "text": "The visualization is useful."},
                {"id": "readable", "text": "The visualization is easy to read."},
                {"id": "complex", "text": "The visualization is complex."}],
    "comment": {"id": "comment", "text": "Comments?"},
    "samples": [{"id": "a", "prompt": "def a():\n"}, {"id": "b", "prompt": "def b():\n"},
                {"id": "c", "prompt": "def c():\n"}],
}
BACKGROUND = {"python": "Expert", "problems": ""}
N_BACKGROUND, N_SAMPLE = 2, 4  # rows per page: every question, blank optional ones as NULL


def store_ratings(i: int, sample: str) -> dict:
    """Participant ``i``'s answers to one sample of :data:`STORE_STUDY` (three ratings and a comment)."""
    return {"useful": i % 5 + 1, "readable": (i + 1) % 5 + 1, "complex": (i + 2) % 5 + 1, "comment": f"p{i}-{sample}"}


def shipped_study_raw() -> dict:
    """The shipped study file (the paper's design) as a plain dict."""
    import yaml

    from asc.study.definition import DEFAULT_STUDY

    return yaml.safe_load(DEFAULT_STUDY.read_text(encoding="utf-8"))


def write_study(tmp_path: Path, data: dict, name: str = "study.yaml") -> Path:
    """``data`` written as YAML or JSON (by the suffix of ``name``) under ``tmp_path``."""
    import json

    import yaml

    path = tmp_path / name
    path.write_text(yaml.safe_dump(data) if name.endswith((".yaml", ".yml")) else json.dumps(data), encoding="utf-8")
    return path


def broken_study(edit) -> dict:
    """A copy of the shipped study with ``edit(data)`` applied."""
    data = shipped_study_raw()
    edit(data)
    return data


def tiny_study_raw(**sample_changes) -> dict:
    """A two-group study on the tiny model: sample ``given`` has a completion, ``gen`` is completed by the model."""
    samples = [{"id": "given", "prompt": "def f(x):\n", "completion": "    return x + 1\n"},
               {"id": "gen", "prompt": "def add(a, b):\n    s = a", "max_new_tokens": 4}]
    samples[1].update(sample_changes)
    return {"id": "tiny", "title": "Tiny", "model": "tiny-random", "consent": "ok",
            "groups": [{"id": "C", "view": "none"}, {"id": "S2", "view": "partial"}],
            "background": [{"id": "python", "text": "Python?", "choices": ["a", "b"]}],
            "ratings": [{"id": "useful", "text": "Useful?"}], "samples": samples}


def tiny_definition(**sample_changes):
    """:func:`tiny_study_raw` parsed (file name ``tiny.yaml``)."""
    from asc.study.definition import parse_study

    return parse_study(tiny_study_raw(**sample_changes), "tiny.yaml")


# --------------------------------------------------------------------------------------- glueCode


GLUECODE_NULL_SRC = "def first(text):\n    m = re.match('a', text)\n    return m.group(0)\n"


def gluecode_items(task: str) -> list:
    """Four hand-made glueCode items of ``task`` (two dev, two test), small enough for the tiny model's window."""
    from probes.gluecode.items import MASK, NO_WARNING, NPATH_BUCKETS, OPERATORS, Item
    from probes.gluecode.nulltoken import NULL_PROMPT

    out = []
    for k in range(4):
        split = "test" if k % 2 else "dev"
        common = {"task": task, "id": f"{task}/{k}", "split": split, "module": f"m{k}"}
        if task == "OPS":
            out.append(Item(**common, function=f"def f{k}(a, b):\n    return a {MASK} b\n", label=OPERATORS[k],
                            candidates=OPERATORS))
        elif task == "NPATH":
            out.append(Item(**common, function=f"def g{k}(x):\n    if x:\n        return {k}\n    return 0\n",
                            label="2", candidates=NPATH_BUCKETS))
        elif task == "NAME":
            out.append(Item(**common, function=f"def {MASK}(n):\n    return n + {k}\n", label=f"add_{k}",
                            candidates=tuple(f"add_{j}" for j in range(4))))
        elif task == "CALL":
            out.append(Item(**common, function=f"def h{k}(s):\n    return {MASK}(s)\n", label="len",
                            meta={"kind": "api"}))
        else:
            start = GLUECODE_NULL_SRC.index("m.group")
            label = "m" if k < 3 else NO_WARNING
            meta = {"start": start, "end": start + 1} if label == "m" else {}
            out.append(Item(**common, function=f"{GLUECODE_NULL_SRC}{NULL_PROMPT}{MASK}\n", label=label,
                            candidates=("text", "m", "re", NO_WARNING), meta=meta))
    return out


def npath_function(name: str, chains: list[int], k: int) -> str:
    """A function whose NPath is the product of (conditions + 1) over ``chains`` (if/elif chains of c conditions)."""
    lines = [f"def {name}(x, y):", f'    """Paths of {name}."""', f"    r = {k}", "    s = r"]
    for c in chains:
        for j in range(c):
            lines += [f"    {'if' if j == 0 else 'elif'} x > {j}:", f"        r += {j + 1}"]
    return "\n".join(lines + ["    return r + s"]) + "\n"


# --------------------------------------------------------------------------------------- BLANCA


BLANCA_FAQ = (  # (question, its answer): short texts, within the tiny model's 64-token window
    ("How do I read a file line by line?", "Open the file with open() and loop over it: each line keeps its newline."),
    ("How do I sort a dictionary by its values?", "Call sorted(d.items(), key=lambda kv: kv[1]) to order the pairs."),
    ("How do I copy a list?", "Use list(a), a[:] or a.copy(); copy.deepcopy also copies the nested objects."),
    ("How do I format a float with two decimals?", "Write an f-string such as f'{x:.2f}' or call format(x, '.2f')."),
    ("How do I run a shell command?", "Call subprocess.run with the arguments as a list and read its stdout."),
    ("How do I measure elapsed time?", "Read time.perf_counter() before and after the code and subtract them."),
)
BLANCA_CLASSES = {  # name: documentation, for H and U pairs
    "Exception": "Common base class for all non-exit exceptions.",
    "LookupError": "Base class for lookup errors.",
    "KeyError": "Mapping key not found.",
    "ValueError": "Inappropriate argument value (of correct type).",
    "dict": "A mapping from keys to values, built from keyword arguments or an iterable of pairs.",
    "OrderedDict": "Dictionary that remembers insertion order.",
    "Counter": "Dict subclass for counting hashable items, sometimes called a bag or multiset.",
    "deque": "A list-like sequence optimized for appends and pops at either end.",
}


def blanca_items(task: str) -> list:
    """Hand-made BLANCA items of ``task`` (R: six questions, four of them test; L, F, H, U: eight pairs, six of them
    test), short enough for the tiny model's window."""
    from probes.blanca.items import PairItem, RankItem, ScoredPairItem

    faq = BLANCA_FAQ
    if task == "R":
        out = []
        for k, (question, answer) in enumerate(faq):
            others = [faq[(k + 1) % len(faq)][1], faq[(k + 3) % len(faq)][1]]
            answers = others[: k % 3] + [answer] + others[k % 3:]  # the true answer moves from first to last
            out.append(RankItem(f"R/{k}", "train" if k >= 4 else "test", question, tuple(answers),
                                tuple(1.0 if a == answer else 0.0 for a in answers)))
        return out
    if task in ("L", "F"):
        return [PairItem(task, f"{task}/{k}", "train" if k >= 6 else "test", faq[k % 6][0],
                         faq[k % 6][1] if k % 2 == 0 else faq[(k + 2) % 6][1], positive=k % 2 == 0,
                         group=f"g{k // 2}" if task == "F" else "", name_a=f"q{k % 6}", name_b=f"a{k}")
                for k in range(8)]
    pairs = [("KeyError", "LookupError", 1, 0.9), ("ValueError", "Exception", 1, 0.8), ("KeyError", "Exception", 2, 0.5),
             ("OrderedDict", "dict", 1, 0.9), ("Counter", "dict", 1, 0.7), ("Counter", "OrderedDict", 2, 0.6),
             ("KeyError", "ValueError", 3, 0.3), ("deque", "Exception", 4, 0.0)]
    return [ScoredPairItem(task, f"{task}/{k}", "train" if k in (3, 6) else "test", BLANCA_CLASSES[a],
                           BLANCA_CLASSES[b], float(dist if task == "H" else sim), a, b)
            for k, (a, b, dist, sim) in enumerate(pairs)]


def write_blanca_set(out: Path, skipped: dict[str, str] | None = None, name: str = "stdlib-seed0") -> Path:
    """The task set ``<out>/tasks/<name>`` of :func:`blanca_items` for every task but those of ``skipped`` (task:
    why), which its ``skipped.json`` records; :func:`probes.blanca.build.build_task_set` then loads it, builds
    nothing. Returns the set's folder."""
    import json

    from probes.blanca.items import BLANCA_TASKS, save_items

    folder = out / "tasks" / name
    for task in BLANCA_TASKS:
        if task not in (skipped or {}):
            save_items(folder / f"{task}.jsonl", task, blanca_items(task), {"source": "tests.helpers"})
    (folder / "skipped.json").write_text(json.dumps(skipped or {}))
    return folder
