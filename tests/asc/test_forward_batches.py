"""asc.scores.forward_batches: exactly the padded batches score_texts runs the model on (make bench times them)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from asc.errors import InputError
from asc.scores import forward_batches, score_texts

LONG = "def long_function(values):\n" + "".join(
    f"    total_{i} = values[{i}] * {i} + {i * 7}\n" for i in range(7)) + "    return total_0\n"
SOURCES = ["def f(x):\n    return x\n", LONG, "y = 2\n"]


class _Recording:
    """A model that records the inputs of every forward pass and delegates everything else."""

    def __init__(self, model) -> None:
        self.model, self.inputs = model, []

    def __call__(self, *, input_ids, attention_mask, **kw):
        self.inputs.append((input_ids.clone(), attention_mask.clone()))
        return self.model(input_ids=input_ids, attention_mask=attention_mask, **kw)

    def __getattr__(self, name):
        return getattr(self.model, name)


@pytest.mark.parametrize("max_window", [None, 16])
def test_forward_batches_are_the_inputs_score_texts_feeds_the_model(tiny, max_window):
    recording = _Recording(tiny.model)
    score_texts(dataclasses.replace(tiny, model=recording), SOURCES, max_window=max_window)
    batches = forward_batches(tiny, SOURCES, max_window=max_window)
    assert len(batches) == len(recording.inputs) > 0
    for (ids, mask), (seen_ids, seen_mask) in zip(batches, recording.inputs, strict=True):
        assert torch.equal(ids, seen_ids) and torch.equal(mask, seen_mask)
    assert sum(len(ids) for ids, _ in batches) > len(SOURCES)  # LONG needs several windows of 16 or 64 tokens


def test_forward_batches_refuses_a_window_too_short_to_score(tiny):
    with pytest.raises(InputError, match="too short"):
        forward_batches(tiny, SOURCES, max_window=1)
    assert forward_batches(tiny, []) == []
