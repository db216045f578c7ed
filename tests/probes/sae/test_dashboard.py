"""probes.sae.dashboard and corpus: tokens bound to nodes, one latent's card, and features() per node of an explanation."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from asc.errors import InputError
from asc.explain import explain
from asc.syntax import parse
from probes.sae import corpus_activations, enrich, features, latent_card, render_card
from probes.sae.activations import encode_snippets, padded, resid_post
from probes.sae.corpus import bound_nodes, load_activations, save_activations
from tests.probes.sae.conftest import FUNCTIONS, identity_sae, random_sae


def _tail(bundle, ids, window):
    """The states of the tokens after the first window, from the windows AsC-Eval would use (half a window on)."""
    stride, out, done, start = window // 2, [], window, window // 2
    while done < len(ids):
        part = resid_post(bundle, 1, *padded(bundle, [ids[start : start + window]]))[0]
        out.append(part[done - start :])
        done, start = start + part.shape[0], start + stride
    return torch.cat(out)


def test_tokens_get_their_deepest_node_and_its_nearest_category(tiny):
    src = 'def f(x):\n    """Doc."""\n    for i in x:\n        return i\n'
    snip = encode_snippets(tiny, [src], 64)[0]
    tree = parse(src)
    cats = {"identifier": "Natural Language", "string": "Natural Language", "for_statement": "Iteration"}
    deepest, owner = bound_nodes(tree, snip.start, snip.end, snip.special, [cats.get(t) for t in tree.type])
    for t in range(snip.n_tokens):
        text = src[snip.start[t]:snip.end[t]].strip()
        if text == "for":
            assert tree.type[deepest[t]] == "for" and tree.type[owner[t]] == "for_statement"
        if text == "Doc":
            assert tree.type[deepest[t]] == "string_content" and tree.type[owner[t]] == "string"
        if text == "def":
            assert owner[t] == -1  # function_definition has no category here


def test_latent_card_and_features(tiny, tmp_path):
    sae = random_sae(32, width=16, k=3)
    acts = corpus_activations(sae, tiny, FUNCTIONS, 1)
    assert acts.n_tokens > 100 and len(acts.sources) == 4 and acts.d_sae == 16
    assert np.all(np.bincount(acts.rows, minlength=acts.n_tokens) == 3)  # TopK: k latents per token (all > 0 here)
    key = {"corpus": "funcs"}
    path = save_activations(acts, tmp_path / "a.npz", key)
    back = load_activations(path, key)
    assert back is not None and np.array_equal(back.values, acts.values) and back.node_types == acts.node_types
    assert load_activations(path, {"corpus": "other"}) is None
    result = enrich(acts.matrix(), acts.snippet, acts.category, acts.node_type, acts.categories, acts.node_types,
                    n_boot=50)
    latent = int(np.argmax(result.fires))
    card = latent_card(acts, result, latent, top=5)
    assert card["label"] == result.label(latent) and len(card["contexts"]) == 5
    values = [c["activation"] for c in card["contexts"]]
    assert values == sorted(values, reverse=True)
    assert sum(card["histogram"]["counts"]) == result.fires[latent]
    assert all("[[" in c["text"] and "]]" in c["text"] for c in card["contexts"])
    text = render_card(card)
    assert text.startswith(f"latent {latent}: ") and "top contexts" in text and "histogram" in text
    with pytest.raises(InputError, match="out of range: this SAE has 16 latents"):
        latent_card(acts, result, 16)


def test_features_gives_each_node_its_strongest_latents(tiny):
    ex = explain(tiny, FUNCTIONS[1])
    sae = random_sae(32, width=16, k=3)
    nf = features(sae, ex, tiny, top=2)
    assert nf.layer == 1 and nf.latents.shape == (ex.tree.n_nodes, 2)
    root = nf.of(0)
    assert len(root) == 2 and root[0][1] >= root[1][1] > 0
    # by hand: the root's best latent is the largest activation over every usable token (in the first window's
    # tokens, whose states need no second window, and over all of them)
    window = tiny.context_length
    assert ex.scores.n_tokens > window  # the snippet takes two windows
    ids, mask = padded(tiny, [ex.scores.ids[:window]])
    with torch.no_grad():
        acts = sae.encode(resid_post(tiny, 1, ids, mask)[0]).numpy()
        acts[0] = 0
        head = features(sae, explain(tiny, FUNCTIONS[1][:40]), tiny, top=1)
        assert head.latents.shape[1] == 1
        acts = np.concatenate([acts, sae.encode(_tail(tiny, ex.scores.ids, window)).numpy()])
    acts[0] = 0  # the first token has no prediction: not read
    assert root[0] == (int(acts.max(0).argmax()), pytest.approx(float(acts.max())))
    ident = features(identity_sae(32), ex, tiny)
    assert ident.latents.shape[1] == 5
    from_python = ex.features(sae, tiny, top=2)  # the explanation's own method: the same call
    np.testing.assert_array_equal(from_python.latents, nf.latents)
    np.testing.assert_array_equal(from_python.values, nf.values)
    with pytest.raises(InputError, match="features\\(\\) takes an SAE"):
        ex.features("runs/sae/tiny", tiny)
