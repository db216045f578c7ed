"""asc.study.frozen: preparation completes and scores once, the frozen file rebuilds the views without a
model, and a frozen file is refused once the samples change."""

from __future__ import annotations

import numpy as np
import pytest

from asc.errors import InputError
from asc.explain import explain_scored
from asc.scores import encode
from asc.study.definition import parse_study
from asc.study.frozen import content_hash, frozen_explanation, load_frozen, prepare_study, save_frozen
from tests.helpers import tiny_definition, tiny_study_raw


def test_prepare_freeze_and_rebuild_without_model(tiny, tmp_path):
    d = tiny_definition()
    frozen = prepare_study(d, tiny)
    given, gen = frozen.sample("given"), frozen.sample("gen")
    # a given completion is kept verbatim; n_prompt counts the tokens the prompt alone tokenizes to
    assert (given.prompt, given.completion, given.generated, given.stop_reason) == (
        "def f(x):\n", "    return x + 1\n", False, None)
    ids_prompt = encode(tiny, given.prompt)[0].tolist()
    assert given.scores.ids[: given.n_prompt].tolist() == ids_prompt[: given.n_prompt]
    assert 0 < given.n_prompt <= len(ids_prompt) and given.scores.source == given.text
    assert gen.generated and gen.stop_reason in {"function_end", "eos", "max_new_tokens"}
    assert gen.text.startswith("def add(a, b):\n    s = a") and gen.n_prompt == len(encode(tiny, gen.prompt)[0])

    path = save_frozen(frozen, tmp_path / "sub" / "tiny.frozen.json")
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]
    loaded = load_frozen(path, d)
    assert loaded.definition_hash == content_hash(d) and [s.id for s in loaded.samples] == ["given", "gen"]
    for before, after in zip(frozen.samples, loaded.samples, strict=True):
        assert (after.prompt, after.completion, after.n_prompt) == (before.prompt, before.completion, before.n_prompt)
        ex, n_prompt = frozen_explanation(after)
        reference = explain_scored(before.model, before.scores, "python", "median")
        assert n_prompt == before.n_prompt
        assert ex.to_dict() == reference.to_dict()
        np.testing.assert_array_equal(ex.values, reference.values)
        np.testing.assert_array_equal(after.scores.top_probs, before.scores.top_probs)
        assert after.scores.top_text == before.scores.top_text


def test_frozen_file_refused_after_the_samples_change(tiny, tmp_path):
    path = save_frozen(prepare_study(tiny_definition(), tiny), tmp_path / "f.json")
    changed = tiny_definition(prompt="def sub(a, b):\n    s = a")
    with pytest.raises(InputError, match="prepare the study again"):
        load_frozen(path, changed)
    # wording of questions is not part of the frozen content: no new preparation needed
    reworded = parse_study({**tiny_study_raw(), "ratings": [{"id": "useful", "text": "Is it useful?"}]}, "tiny.yaml")
    assert load_frozen(path, reworded).study_id == "tiny"
    with pytest.raises(InputError, match="prepare it first"):
        load_frozen(tmp_path / "absent.json", changed)
    (tmp_path / "broken.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(InputError, match="prepare it again"):
        load_frozen(tmp_path / "broken.json", changed)
