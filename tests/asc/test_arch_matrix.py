"""The architecture matrix (issue 45, 1): every feature on a tiny random model of each family the model adapter
knows (:data:`asc.arch.VERIFIED_TYPES`): AsC-Eval scores, the logit lens (last layer = output within 1e-5),
gradient x input, integrated gradients (complete within 1%), occlusion, activation patching (the whole clean
residual stream restores the clean value, cached and hooked), a branch from the KV cache (= the uncached decode)
and the embeddings' scale. ``tests/support/arch_matrix.py`` builds the models and holds the checks;
``benchmarks/arch_matrix.py`` writes the table ``docs/bench/arch_matrix.md`` from the same checks.

Cheap by design: 2 layers, hidden size 32, one 17-token snippet, one model alive at a time (built when its family's
first test runs, in about 0.05 s), one torch thread (tiny matrices gain nothing from more): about 10 s in all."""

from __future__ import annotations

from pathlib import Path

import pytest

from asc.arch import VERIFIED_TYPES
from tests.support import arch_matrix as matrix

TABLE = Path(__file__).resolve().parents[2] / "docs" / "bench" / "arch_matrix.md"
CASES = [(family, feature) for family in matrix.FAMILIES for feature, _ in matrix.CHECKS]


@pytest.fixture(scope="module")
def models():
    """The tokenizer, and the current family's bundle (one at a time: each family's tests run together)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    tok, _ = matrix.tokenizer()
    built: dict = {}

    def get(family: str):
        if family not in built:
            built.clear()
            built[family] = matrix.build(family, tok)
        return built[family]

    yield get
    torch.set_num_threads(threads)


@pytest.mark.parametrize(("family", "feature"), CASES, ids=[f"{f}-{c}" for f, c in CASES])
def test_every_feature_on_every_family(models, family, feature):
    matrix.run_check(feature, models(family), family)


def test_the_adapter_verifies_exactly_the_families_of_the_matrix():
    types = set(matrix.model_types().values())
    assert len(types) == len(matrix.FAMILIES)
    assert types == VERIFIED_TYPES - {"gemma3"}  # the multimodal Gemma 3: gemma3_text's decoder


def test_the_table_lists_every_family_and_feature():
    """``python benchmarks/arch_matrix.py`` rewrites it: run it when a family or a check is added."""
    text = TABLE.read_text()
    header = next(line for line in text.splitlines() if line.startswith("| family"))
    assert [c.strip() for c in header.strip("|").split("|")][2:] == [c for c, _ in matrix.CHECKS]
    rows = {line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ")}
    assert set(matrix.FAMILIES) <= rows
