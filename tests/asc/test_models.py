"""Model loading: embedded registry, local folders, hub ids (offline, from a hub-layout cache), errors."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from asc.errors import ModelLoadError, UnknownModelError
from asc.models import EMBEDDED, load_model
from tests.helpers import ROOT
from tests.support.models import tiny_random_model


def _logits(bundle, text="def f(x):\n    return x\n"):
    ids = bundle.tokenizer(text, return_tensors="pt")["input_ids"]
    with torch.inference_mode():
        return bundle.model(ids).logits.numpy()


def test_tiny_random_is_deterministic_and_has_no_bos():
    a, b = tiny_random_model(), tiny_random_model()
    np.testing.assert_array_equal(_logits(a), _logits(b))
    assert a.context_length == 64
    assert not a.adds_bos
    assert tiny_random_model(add_bos=True).adds_bos


def test_unknown_name_lists_embedded_names_and_forms():
    with pytest.raises(UnknownModelError) as err:
        load_model("smolm2")
    msg = str(err.value)
    for name in EMBEDDED:
        assert name in msg
    assert ".gguf" in msg and "folder" in msg and "hub id" in msg


def test_an_unknown_spec_fails_before_torch_is_needed(monkeypatch, tmp_path):
    """A spec of no accepted form is refused before the device is resolved (that imports torch: seconds in a fresh
    process, e.g. a Ray actor given a typo); every accepted form passes the check."""
    from asc import device as device_mod
    from asc.models import check_spec

    def no_torch(*args, **kwargs):
        raise AssertionError("the device was resolved (torch imported) before the spec was checked")

    monkeypatch.setattr(device_mod, "resolve", no_torch)
    with pytest.raises(UnknownModelError, match="no-such-model"):
        load_model("no-such-model")
    for spec in (next(iter(EMBEDDED)), str(tmp_path / "m.gguf"), str(tmp_path), "HuggingFaceTB/SmolLM2-135M"):
        check_spec(spec)


def test_local_folder_loads_same_weights(tmp_path):
    tiny = tiny_random_model()
    tiny.model.save_pretrained(tmp_path)
    tiny.tokenizer.save_pretrained(tmp_path)
    loaded = load_model(str(tmp_path))
    assert loaded.source == str(tmp_path)
    np.testing.assert_allclose(_logits(loaded), _logits(tiny), atol=1e-6)


def test_folder_without_model_files_is_a_clear_error(tmp_path):
    with pytest.raises(ModelLoadError, match="config.json"):
        load_model(str(tmp_path))


def test_missing_gguf_file(tmp_path):
    with pytest.raises(ModelLoadError, match="not found"):
        load_model(str(tmp_path / "nothing.gguf"))


def test_custom_code_is_refused_without_trust_remote_code(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps({
        "model_type": "asc-custom", "auto_map": {"AutoConfig": "conf.CustomConfig",
                                                 "AutoModelForCausalLM": "model.CustomModel"}}))
    (tmp_path / "conf.py").write_text("raise SystemExit('remote code must not run')\n")
    with pytest.raises(ModelLoadError, match="could not load"):
        load_model(str(tmp_path))


def test_hub_id_offline_fails_with_hint():
    with pytest.raises(ModelLoadError, match="hub cannot be reached"):
        load_model("asc-test/not-cached-anywhere")


@pytest.mark.slow
def test_hub_id_loads_from_hub_cache_offline(tmp_path):
    """The hub-id code path, exercised with a hub-layout cache since no hub is reachable here."""
    snap = tmp_path / "hub" / "models--asc-test--tiny" / "snapshots" / ("0" * 40)
    snap.mkdir(parents=True)
    tiny = tiny_random_model()
    tiny.model.save_pretrained(snap)
    tiny.tokenizer.save_pretrained(snap)
    refs = tmp_path / "hub" / "models--asc-test--tiny" / "refs"
    refs.mkdir()
    (refs / "main").write_text("0" * 40)
    code = ("from asc.models import load_model\n"
            "b = load_model('asc-test/tiny')\n"
            "print(b.name, b.n_layers, b.context_length)\n")
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(tmp_path / "hub"), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["asc-test/tiny", "2", "64"]


def _registry_in_a_fresh_process(**env: str) -> list[str]:
    code = "from asc.models import EMBEDDED\nprint(' '.join(f'{n}:{e.synthetic:d}' for n, e in EMBEDDED.items()))\n"
    base = {k: v for k, v in os.environ.items() if k != "ASC_MODEL_MODULES"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=120,
                         env={**base, "PYTHONPATH": str(ROOT), **env})
    assert out.returncode == 0, out.stderr[-2000:]
    return out.stdout.split()


def test_the_registry_ships_no_test_model_and_the_tests_register_theirs():
    shipped = _registry_in_a_fresh_process()
    assert shipped == ["smollm2-135m:0", "gemma3-270m:0", "minilm-l6:0"]  # production: real models only
    assert _registry_in_a_fresh_process(ASC_MODEL_MODULES="tests.support.models") == [*shipped, "tiny-random:1"]


def test_register_model_needs_a_builder_and_keeps_shipped_names():
    from asc.errors import InputError
    from asc.models import EmbeddedModel, register_model

    with pytest.raises(InputError, match="build="):
        register_model(EmbeddedModel("mine", "no builder", ""))
    with pytest.raises(InputError, match="shipped model"):
        register_model(EmbeddedModel("smollm2-135m", "a clash", "", build=tiny_random_model))
    assert EMBEDDED["smollm2-135m"].build is None and "mine" not in EMBEDDED


def test_registry_reports_installation():
    assert EMBEDDED["tiny-random"].installed()
    assert EMBEDDED["smollm2-135m"].installed()  # `make test` installs it


def test_causal_or_encoder_is_read_from_the_config():
    from transformers import BertConfig, GPT2Config, LlamaConfig

    from asc.models import _is_causal

    assert _is_causal(GPT2Config())
    assert _is_causal(LlamaConfig(architectures=["LlamaForCausalLM"]))
    assert not _is_causal(BertConfig())  # BERT has a causal head class too: its type alone says encoder
    assert not _is_causal(BertConfig(architectures=["BertModel"]))
    assert _is_causal(BertConfig(architectures=["BertModel"], is_decoder=True))


def test_local_encoder_folder_loads_as_encoder_and_refuses_scoring(tmp_path, tiny):
    from transformers import BertConfig, BertModel

    from asc import score_text
    from asc.errors import InputError

    cfg = BertConfig(vocab_size=len(tiny.tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=64, architectures=["BertModel"])
    BertModel(cfg).save_pretrained(tmp_path / "enc")
    tiny.tokenizer.save_pretrained(tmp_path / "enc")
    bundle = load_model(str(tmp_path / "enc"))
    assert not bundle.causal and bundle.describe()["kind"] == "encoder" and bundle.n_layers == 2
    with pytest.raises(InputError, match="is an encoder.*smollm2-135m"):
        score_text(bundle, "x = 1\n")


@pytest.mark.real
def test_embedded_minilm_is_an_encoder():
    from asc.errors import InputError
    from asc.generate import complete
    from asc.models import embedded_names

    assert embedded_names("encoder") == ["minilm-l6"] and "minilm-l6" not in embedded_names("decoder")
    bundle = load_model("minilm-l6")
    assert not bundle.causal and bundle.n_layers == 6 and bundle.tokenizer.cls_token == "[CLS]"
    with pytest.raises(InputError, match="encoder"):
        complete(bundle, "def f(x):\n")


# ---------------------------------------------------------------------------------------------- device and dtype


def test_default_load_is_cpu_float32_and_recorded():
    bundle = load_model("tiny-random")
    assert (bundle.device, bundle.dtype) == ("cpu", "float32")
    assert next(bundle.model.parameters()).dtype == torch.float32
    assert bundle.summary()["device"] == "cpu" and bundle.describe()["dtype"] == "float32"


def test_dtype_moves_the_weights(tmp_path):
    tiny = tiny_random_model()
    tiny.model.save_pretrained(tmp_path)
    tiny.tokenizer.save_pretrained(tmp_path)
    for spec in ("tiny-random", str(tmp_path)):
        half = load_model(spec, device="cpu", dtype="bfloat16")
        assert half.dtype == "bfloat16" and half.describe()["dtype"] == "bfloat16"
        assert {p.dtype for p in half.model.parameters()} == {torch.bfloat16}


def test_bad_device_is_an_input_error_before_loading():
    from asc.errors import InputError

    with pytest.raises(InputError, match="unknown device"):
        load_model("tiny-random", device="tpu")


def test_fit_is_checked_before_loading(tmp_path, monkeypatch):
    from asc import device as device_mod

    tiny = tiny_random_model()
    tiny.model.save_pretrained(tmp_path)
    tiny.tokenizer.save_pretrained(tmp_path)
    monkeypatch.setattr(device_mod, "free_bytes", lambda device: 1000)  # fake: 1000 bytes free

    def no_weights(*args, **kwargs):
        raise AssertionError("weights were read before the fit check")

    import transformers

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", no_weights)
    with pytest.raises(ModelLoadError, match="does not fit on cpu"):
        load_model(str(tmp_path))
    with pytest.raises(ModelLoadError, match="smollm2-135m does not fit"):
        load_model("smollm2-135m")


def test_model_larger_than_one_gpu_uses_device_map_auto(tmp_path, monkeypatch):
    """Only the code path: CUDA is faked, and from_pretrained records its arguments."""
    import transformers

    from asc import device as device_mod
    from asc import models

    tiny = tiny_random_model()
    tiny.model.save_pretrained(tmp_path)
    tiny.tokenizer.save_pretrained(tmp_path)
    seen = {}
    real = transformers.AutoModelForCausalLM.from_pretrained

    def recording(folder, **kwargs):
        seen.update(kwargs)
        model = real(folder, dtype=kwargs["dtype"])
        model.hf_device_map = {"transformer.h.0": 0, "transformer.h.1": 1}
        return model

    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", recording)
    monkeypatch.setattr(device_mod, "plan_placement", lambda *a, **k: "auto")
    fake_cuda = (torch.device("cuda:0"), torch.bfloat16)
    bundle = models._place(models._load(str(tmp_path), False, fake_cuda), *fake_cuda)
    assert seen["device_map"] == "auto" and seen["dtype"] == torch.bfloat16
    assert bundle.device == "auto-map" and bundle.dtype == "bfloat16"


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_load_on_cuda_scores_like_cpu():
    from asc import score_text

    cpu = load_model("tiny-random")
    gpu = load_model("tiny-random", device="cuda", dtype="float32")
    assert gpu.device == "cuda:0" and next(gpu.model.parameters()).is_cuda
    a, b = score_text(cpu, "def f(x):\n    return x\n"), score_text(gpu, "def f(x):\n    return x\n")
    np.testing.assert_allclose(a.prob, b.prob, atol=1e-5)
