"""probes.sae.model: SAELens's folder layout read and written, the SAE's maths, and the model/layer checks."""

from __future__ import annotations

import json

import pytest
import torch
from safetensors.torch import save_file

from asc.errors import InputError
from probes.sae import SaeMismatchError, SparseAutoencoder, check_sae_for, load_sae, save_sae
from probes.sae.model import CFG_FILE, WEIGHTS_FILE, hook_name, layer_of_hook
from tests.probes.sae.conftest import identity_sae, random_sae


def test_save_then_load_gives_identical_weights_and_encodings(tmp_path):
    sae = random_sae(8, width=24, k=5)
    save_sae(sae, tmp_path / "s")
    back = load_sae(tmp_path / "s")
    assert back.cfg.to_cfg() == sae.cfg.to_cfg()
    for key, value in sae.weights().items():
        assert torch.equal(back.weights()[key], value), key
    x = torch.randn(50, 8, generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        assert torch.equal(back.encode(x), sae.encode(x)) and torch.equal(back(x), sae(x))
        assert int((sae.encode(x) > 0).sum(-1).max()) <= 5


def test_the_folder_is_saelens_6_layout(tmp_path):
    save_sae(random_sae(8, width=24, k=5, layer=3), tmp_path)
    cfg = json.loads((tmp_path / CFG_FILE).read_text())
    assert {"d_in", "d_sae", "dtype", "device", "apply_b_dec_to_input", "normalize_activations",
            "reshape_activations", "metadata", "architecture", "k", "rescale_acts_by_decoder_norm"} <= set(cfg)
    assert cfg["architecture"] == "topk" and cfg["k"] == 5 and cfg["normalize_activations"] == "none"
    meta = cfg["metadata"]
    assert meta["hook_name"] == "blocks.3.hook_resid_post" and meta["model_name"] == "tiny-random"
    assert int(meta["sae_lens_version"].split(".")[0]) >= 6  # SAELens's loader would convert an older config
    from safetensors.torch import load_file

    shapes = {k: tuple(v.shape) for k, v in load_file(str(tmp_path / WEIGHTS_FILE)).items()}
    assert shapes == {"W_enc": (8, 24), "W_dec": (24, 8), "b_enc": (24,), "b_dec": (8,)}


def _write(folder, cfg, weights):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / CFG_FILE).write_text(json.dumps(cfg))
    save_file(weights, str(folder / WEIGHTS_FILE))


def _weights(d=4, m=6, seed=0):
    g = torch.Generator().manual_seed(seed)
    return {"W_enc": torch.randn(d, m, generator=g), "W_dec": torch.randn(m, d, generator=g),
            "b_enc": torch.randn(m, generator=g), "b_dec": torch.randn(d, generator=g)}


def test_a_folder_as_saelens_6_writes_it_loads_and_encodes_as_saelens_does(tmp_path):
    """The cfg.json of SAELens 6's TopKSAEConfig.to_dict (its field order), and SAELens's TopK maths by hand:
    topk of (x - b_dec) @ W_enc + b_enc, ReLU, decode acts @ W_dec + b_dec."""
    cfg = {"d_in": 4, "d_sae": 6, "dtype": "float32", "device": "cpu", "apply_b_dec_to_input": True,
           "normalize_activations": "none", "reshape_activations": "none",
           "metadata": {"sae_lens_version": "6.5.0", "sae_lens_training_version": "6.5.0", "model_name": "gpt2",
                        "hook_name": "blocks.2.hook_resid_post", "context_size": 128, "prepend_bos": True},
           "k": 2, "rescale_acts_by_decoder_norm": False, "architecture": "topk"}
    w = _weights()
    _write(tmp_path, cfg, w)
    sae = load_sae(tmp_path)
    assert sae.cfg.layer == 2 and sae.cfg.model_name == "gpt2" and sae.cfg.metadata["context_size"] == 128
    x = torch.randn(5, 4, generator=torch.Generator().manual_seed(3))
    pre = (x - w["b_dec"]) @ w["W_enc"] + w["b_enc"]
    top = torch.topk(pre, 2, dim=-1)
    want = torch.zeros_like(pre).scatter(-1, top.indices, top.values.relu())
    with torch.no_grad():
        assert torch.allclose(sae.encode(x), want)
        assert torch.allclose(sae.decode(want), want @ w["W_dec"] + w["b_dec"])


def test_a_pre_6_config_loads(tmp_path):
    """SAELens before 6.0: flat model_name, hook_point, activation_fn_str topk with activation_fn_kwargs.k."""
    cfg = {"d_in": 4, "d_sae": 6, "dtype": "float32", "model_name": "tiny-random", "hook_point": "blocks.1.hook_resid_pre",
           "activation_fn_str": "topk", "activation_fn_kwargs": {"k": 3}, "normalize_activations": False,
           "apply_b_dec_to_input": False}
    _write(tmp_path, cfg, _weights())
    sae = load_sae(tmp_path)
    assert (sae.cfg.architecture, sae.cfg.k, sae.cfg.layer, sae.cfg.apply_b_dec_to_input) == ("topk", 3, 0, False)


def test_saelens_own_save_function_writes_a_folder_that_loads(tmp_path):
    sae_lens = pytest.importorskip("sae_lens")
    cfg = sae_lens.TopKSAEConfig(d_in=4, d_sae=6, k=2)
    cfg.metadata.model_name = "tiny-random"
    cfg.metadata.hook_name = "blocks.1.hook_resid_post"
    theirs = sae_lens.TopKSAE(cfg)
    theirs.save_model(tmp_path)
    ours = load_sae(tmp_path)
    x = torch.randn(5, 4)
    with torch.no_grad():
        assert torch.allclose(ours.encode(x), theirs.encode(x), atol=1e-6)
        assert torch.allclose(ours(x), theirs.decode(theirs.encode(x)), atol=1e-6)


@pytest.mark.parametrize("change, words", [
    ({"architecture": "gated"}, "architecture 'gated'"),
    ({"normalize_activations": "expected_average_only_in"}, "normalize_activations"),
    ({"k": 0}, "k between 1"),
    ({"metadata": {"hook_name": "blocks.1.attn.hook_z", "sae_lens_version": "6.5.0"}}, "residual-stream"),
    ({"d_sae": 7}, "another SAE width"),
])
def test_folders_that_cannot_be_read_say_why_in_one_line(tmp_path, change, words):
    cfg = {"d_in": 4, "d_sae": 6, "architecture": "topk", "k": 2,
           "metadata": {"hook_name": "blocks.1.hook_resid_post", "sae_lens_version": "6.5.0"}, **change}
    _write(tmp_path, cfg, _weights())
    with pytest.raises(InputError, match=words) as err:
        load_sae(tmp_path)
    assert "\n" not in str(err.value)


def test_missing_folder_and_files(tmp_path):
    with pytest.raises(InputError, match="not a folder"):
        load_sae(tmp_path / "nope")
    with pytest.raises(InputError, match="no cfg.json"):
        load_sae(tmp_path)


def test_hook_names():
    assert hook_name(4) == "blocks.4.hook_resid_post" and layer_of_hook(hook_name(4)) == 4
    assert layer_of_hook("blocks.4.hook_resid_pre") == 3
    for bad in ("blocks.0.hook_resid_pre", "hook_embed", "blocks.1.hook_mlp_out"):
        with pytest.raises(InputError):
            layer_of_hook(bad)


def test_another_model_or_layer_is_one_line_naming_both(tiny):
    d = 32
    assert check_sae_for(identity_sae(d, layer=1), tiny) == 1
    with pytest.raises(SaeMismatchError, match="'gpt2-small'.*'tiny-random'"):
        check_sae_for(identity_sae(d, model="gpt2-small"), tiny)
    with pytest.raises(SaeMismatchError, match="layer 1 .*not layer 0"):
        check_sae_for(identity_sae(d, layer=1), tiny, layer=0)
    with pytest.raises(SaeMismatchError, match="16-wide.*32 wide"):
        check_sae_for(identity_sae(16), tiny)
    with pytest.raises(SaeMismatchError, match="layer 5 but tiny-random has 2 layers"):
        check_sae_for(identity_sae(d, layer=5), tiny)
    assert isinstance(identity_sae(d), SparseAutoencoder)
