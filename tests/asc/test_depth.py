"""AsC-Eval per layer (asc.depth): the last layer equals explain(), layer values aggregate the lens like the output,
crossings read the category curves, the JSON block is complete; ``python -m asc explain --per-layer --json``."""

from __future__ import annotations

import json
import math

import numpy as np

from asc.depth import LayerExplanation, explain_completion_layers, explain_layers
from asc.explain import explain, node_values
from asc.generate import Completion, explain_completion
from tests.asc.test_lens import split_tokens

SOURCE = "def count(xs):\n    n = 0\n    for x in xs:\n        if x > 0:\n            n += 1\n    return n\n"


def test_last_layer_equals_explain_and_every_layer_is_aggregated(tiny):
    depth = explain_layers(tiny, SOURCE)
    plain = explain(tiny, SOURCE)
    assert depth.values.shape == (3, plain.tree.n_nodes)
    assert np.allclose(depth.values[-1], plain.values, equal_nan=True, atol=1e-9)
    assert np.allclose(depth.category_values[-1], [plain.category_values[c] for c in plain.categories], equal_nan=True)
    from asc.concepts import load_categories

    again, _, cats = node_values(depth.lens.prob[1], plain.tree, plain.alignment, load_categories("python"))
    assert np.allclose(depth.values[1], again, equal_nan=True)
    assert np.allclose(depth.category_values[1], [cats[c] for c in plain.categories], equal_nan=True)


def test_a_completion_keeps_its_exact_ids_at_every_layer(tiny):
    ids, start, end = split_tokens(tiny, SOURCE, 6)
    comp = Completion(prompt=SOURCE[:20], text=SOURCE, ids=ids, start=start, end=end,
                      special=np.zeros(len(ids), dtype=bool), n_prompt=int(np.searchsorted(start, 20)),
                      stop_reason="function_end")
    depth = explain_completion_layers(tiny, comp)
    output = explain_completion(tiny, comp)
    assert np.array_equal(depth.lens.output.ids, comp.ids)  # not the text re-tokenized (explain_layers)
    assert depth.explanation.scores.n_tokens == output.scores.n_tokens == len(ids) != explain(tiny, SOURCE).scores.n_tokens
    assert np.allclose(depth.values[-1], output.values, equal_nan=True, atol=1e-9)
    assert np.allclose(depth.explanation.scores.prob, output.scores.prob, equal_nan=True, atol=1e-7)


def _fake(curves: list[list[float]]) -> LayerExplanation:
    class Ex:
        categories = ("A", "B", "C")

    return LayerExplanation(Ex(), None, np.zeros((len(curves), 1)), np.asarray(curves, dtype=float))  # type: ignore[arg-type]


def test_the_confidence_line_is_one_constant():
    """The per-layer crossing, the corpus crossing table and the CLI's --threshold all default to
    asc.concepts.CONFIDENCE_LINE (the 0.6 line was a literal in each)."""
    import inspect

    from asc.cli import build_parser
    from asc.concepts import CONFIDENCE_LINE
    from asc.corpus.depth import crossing_table

    assert inspect.signature(LayerExplanation.crossing).parameters["threshold"].default is CONFIDENCE_LINE
    assert inspect.signature(crossing_table).parameters["threshold"].default is CONFIDENCE_LINE
    from asc.viz import corpus, corpus_depth, snippet
    for figure in (corpus.category_bars, corpus.styled_table, corpus_depth.layer_heatmap, corpus_depth.depth_curves,
                   snippet.category_figure):
        assert inspect.signature(figure).parameters["threshold"].default is CONFIDENCE_LINE, figure.__name__
    assert build_parser().parse_args(["eval", "--corpus", "algorithms", "--model", "tiny-random", "--out", "o"]).threshold \
        is CONFIDENCE_LINE


def test_crossing_is_the_first_layer_at_or_above_the_line():
    depth = _fake([[0.1, 0.2, math.nan], [0.6, 0.3, math.nan], [0.5, 0.7, math.nan], [0.9, 0.8, math.nan]])
    from asc.concepts import CONFIDENCE_LINE

    assert CONFIDENCE_LINE == 0.6  # the paper's line
    assert depth.crossing() == {"A": 1, "B": 2, "C": None}
    assert depth.crossing(0.85) == {"A": 3, "B": None, "C": None}
    frame = depth.category_frame()
    assert len(frame) == 8 and frame["depth"].max() == 1.0 and set(frame["category"]) == {"A", "B"}


def test_json_block_has_every_layer(tiny):
    depth = explain_layers(tiny, SOURCE)
    block = json.loads(json.dumps(depth.to_dict(), allow_nan=False))
    assert block["n_layers"] == 3 and len(block["token_prob"]) == 3
    assert len(block["token_prob"][0]) == depth.explanation.scores.n_tokens and block["token_prob"][0][0] is None
    assert set(block["category_values"]) == set(depth.categories)
    assert block["crossing"] == depth.crossing()


def test_cli_explain_layers_json(tiny, tmp_path, capsys):
    """``explain --per-layer``; its old spelling ``--per-layer`` does the same and, once done, says the new one once."""
    from asc.cli import main

    path = tmp_path / "s.py"
    path.write_text(SOURCE)
    assert main(["explain", str(path), "--model", "tiny-random", "--per-layer", "--json"]) == 0
    captured = capsys.readouterr()
    payload = json.loads(captured.out)
    assert payload["layers"]["n_layers"] == 3 and "tokens" in payload and captured.err == ""
    assert main(["explain", str(path), "--model", "tiny-random", "--layers", "--layers"]) == 0
    captured = capsys.readouterr()
    assert "per layer (logit lens; layer 0 = embeddings, 2 = output)" in captured.out and "Iteration" in captured.out
    assert captured.err == "note: `--layers` is now `--per-layer` (the old name still works)\n"


def test_a_layer_as_an_explanation_draws_that_layers_values(tiny):
    """``at(layer)``: the same tree and alignment with that layer's token statistics and the node, node-type and
    category values aggregated from them (what the inspector's views read); the output layer is the explanation."""
    import dataclasses

    import pytest

    from asc.concepts import load_categories
    from asc.depth import top_vocab
    from asc.errors import InputError
    from asc.scores import vocab_text

    depth = explain_layers(tiny, SOURCE, aggregate="mean")
    assert depth.at(2) is depth.explanation and depth.at(-1) is depth.explanation
    vocab = top_vocab(depth.lens, tiny.tokenizer)
    full = vocab_text(tiny.tokenizer)
    assert vocab and all(vocab[i] == full[i] for i in vocab)
    for layer in (0, 1):
        ex = depth.at(layer, vocab)
        lens = depth.lens
        assert ex.tree is depth.explanation.tree and ex.alignment is depth.explanation.alignment
        assert ex.aggregate == "mean" and ex.categories == depth.categories
        np.testing.assert_array_equal(ex.scores.prob, lens.prob[layer])
        np.testing.assert_array_equal(ex.scores.rank, lens.rank[layer])
        np.testing.assert_array_equal(ex.scores.entropy, lens.entropy[layer])
        np.testing.assert_array_equal(ex.scores.top_probs, lens.top_probs[layer])
        assert ex.scores.top_text == tuple(tuple(full[i] for i in row if i >= 0) for row in lens.top_ids[layer].tolist())
        assert np.allclose(ex.values, depth.values[layer], equal_nan=True)
        assert np.allclose([ex.category_values[c] for c in ex.categories], depth.category_values[layer], equal_nan=True)
        _, concepts, _ = node_values(lens.prob[layer], ex.tree, ex.alignment, load_categories("python"), "mean")
        assert ex.concept_values == pytest.approx(concepts, nan_ok=True)
        assert ex.loss == pytest.approx(-np.nanmean(lens.logprob[layer]))
        assert ex.scores.source == SOURCE and ex.scores.n_tokens == depth.explanation.scores.n_tokens
    # without a vocabulary: the output's decoded ids keep their text, others are named by id
    ex0 = depth.at(0)
    known = {i: t for r, rt in zip(depth.explanation.scores.top_ids.tolist(), depth.explanation.scores.top_text)
             for i, t in zip(r, rt)}
    flat = [(i, t) for r, rt in zip(depth.lens.top_ids[0].tolist(), ex0.scores.top_text) for i, t in zip(r, rt)]
    assert flat and all(t == known.get(i, f"<id {i}>") for i, t in flat)
    with pytest.raises(InputError, match=r"layer 3 does not exist: .*0 \(embeddings\) \.\. 2 \(output\)"):
        depth.at(3)
    # a custom category mapping is kept (the tree's own node categories)
    renamed = dataclasses.replace(depth, explanation=dataclasses.replace(
        depth.explanation, node_category=tuple("Any" if c else None for c in depth.explanation.node_category),
        categories=("Any",)))
    assert set(renamed.at(0, vocab).category_values) == {"Any"}


def test_node_curve_is_the_node_across_layers(tiny):
    import pytest

    from asc.errors import InputError

    depth = explain_layers(tiny, SOURCE)
    node = int(np.flatnonzero(~np.isnan(depth.values[-1]))[3])
    curve = depth.node_curve(node)
    assert list(curve.columns) == ["layer", "depth", "value"] and curve["layer"].tolist() == [0, 1, 2]
    assert curve["depth"].tolist() == [0.0, 0.5, 1.0]
    np.testing.assert_array_equal(curve["value"], depth.values[:, node])
    with pytest.raises(InputError, match="not in this snippet's tree"):
        depth.node_curve(depth.values.shape[1])
