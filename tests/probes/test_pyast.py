"""probes.pyast: list walks that give ast.walk's and ast.iter_child_nodes' nodes in their order, and the pause of
the cyclic garbage collector the task builders hold (nested, concurrent, restored)."""

from __future__ import annotations

import ast
import gc
import threading

import pytest

from probes.pyast import child_nodes, gc_paused, walk

CODE = '''\
async def f(a, /, b: int = 1, *args, c, **kw) -> list[int]:
    """Doc."""
    global g
    x = [y for y in a if y > b] or {k: v for k, v in kw.items()}
    async with open(a) as fh, lock:
        match x:
            case [1, *rest] if rest:
                pass
            case {"k": v, **others}:
                x = f"{v!r:>{b}} and {others}"
            case Point(x=0) | None:
                del x
    try:
        yield (lambda q: q ** 2)(b) if c else await g
    except* (ValueError, TypeError) as err:
        raise RuntimeError from err
    finally:
        x @= (n := 2)
'''


def test_walk_gives_ast_walks_nodes_in_its_order():
    tree = ast.parse(CODE)
    nodes = walk(tree)
    assert len(nodes) >= 100
    assert [id(n) for n in nodes] == [id(n) for n in ast.walk(tree)]
    for node in nodes:
        assert [id(c) for c in child_nodes(node)] == [id(c) for c in ast.iter_child_nodes(node)]


def test_gc_is_paused_inside_nested_blocks_and_restored_after_the_last():
    assert gc.isenabled()
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the outer block still holds it
    assert gc.isenabled()
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("a build that fails")
    assert gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()  # off before: left off
    finally:
        gc.enable()


def test_concurrent_blocks_share_one_pause():
    entered, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def build() -> None:
        with gc_paused():
            entered.set()
            release.wait(10)
            seen.append(gc.isenabled())

    other = threading.Thread(target=build)
    with gc_paused():
        other.start()
        assert entered.wait(10)
    assert not gc.isenabled()  # the other thread's build still runs
    release.set()
    other.join(10)
    assert seen == [False] and gc.isenabled()
