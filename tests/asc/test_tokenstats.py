"""asc/tokenstats.py: the CPU takes the logits in cache-sized row blocks, and a row's statistics do not depend on
the block it is in."""

from __future__ import annotations

import numpy as np
import torch

from asc import tokenstats


def test_cpu_statistics_go_in_blocks_of_cpu_rows_with_the_same_values(monkeypatch):
    gen = torch.Generator().manual_seed(0)
    n, vocab = 3 * tokenstats.CPU_ROWS + 5, 4096
    logits = torch.randn(n, vocab, generator=gen) * 4
    logits[:, :7] = float("-inf")  # a masked part of the vocabulary, as some models have
    targets = torch.randint(7, vocab, (n,), generator=gen)
    budget = 1 << 30  # room for every row at once: the block is CPU_ROWS's doing

    stats = tokenstats._stats
    blocks: list[int] = []

    def counted(block, *args):
        blocks.append(block.shape[0])
        return stats(block, *args)

    monkeypatch.setattr(tokenstats, "_stats", counted)
    threads = torch.get_num_threads()
    torch.set_num_threads(2)  # a row's reductions split the same way, whatever rows come with it
    try:
        got = tokenstats.eager_stats(logits.clone(), targets, 5, budget)
        assert max(blocks) == tokenstats.CPU_ROWS and sum(blocks) == n
        monkeypatch.setattr(tokenstats, "CPU_ROWS", n)
        blocks.clear()
        whole = tokenstats.eager_stats(logits.clone(), targets, 5, budget)
        assert blocks == [n]
    finally:
        torch.set_num_threads(threads)
    for a, b in zip(got, whole, strict=True):
        np.testing.assert_array_equal(a, b)
    assert np.isfinite(got[1]).all() and (got[2] >= 1).all()
