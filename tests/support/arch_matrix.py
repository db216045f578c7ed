"""The architecture matrix: one tiny random model per family the model adapter (:mod:`asc.arch`) knows, and the
checks every feature must pass on each, shared by ``tests/asc/test_arch_matrix.py`` and
``benchmarks/arch_matrix.py`` (which writes the table ``docs/bench/arch_matrix.md``).

Each model is built from its ``transformers`` config class in process (no download): 2 layers, hidden size 32,
random weights (seed 0), the vocabulary sized to SmolLM2's real tokenizer (read from the embedded model's
de-quantized folder, else from its GGUF file; the tests' tiny BPE tokenizer where SmolLM2 is not installed). Every
check runs on one short snippet and raises ``AssertionError`` saying what differs; it returns a short note for the
table.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

SNIPPET = "def add(a, b):\n    total = a + b\n    return total\n"
_SMALL = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
              max_position_embeddings=128)
_GPT = dict(n_positions=128, n_embd=32, n_layer=2, n_head=2)


def _configs(vocab: int) -> dict[str, Callable[[], Any]]:
    import transformers as t

    kv = dict(num_key_value_heads=1, **_SMALL)  # grouped-query attention where the family has it
    return {
        "Llama": lambda: t.LlamaConfig(vocab_size=vocab, **kv),
        "Mistral": lambda: t.MistralConfig(vocab_size=vocab, **kv),
        "Qwen2": lambda: t.Qwen2Config(vocab_size=vocab, **kv),
        "Qwen3": lambda: t.Qwen3Config(vocab_size=vocab, head_dim=16, **kv),
        "Phi-3": lambda: t.Phi3Config(vocab_size=vocab, pad_token_id=0, **kv),
        "Phi": lambda: t.PhiConfig(vocab_size=vocab, **_SMALL),
        "Starcoder2": lambda: t.Starcoder2Config(vocab_size=vocab, **kv),
        "GPT-NeoX": lambda: t.GPTNeoXConfig(vocab_size=vocab, **_SMALL),
        "GPT-2": lambda: t.GPT2Config(vocab_size=vocab, **_GPT),
        "GPTBigCode": lambda: t.GPTBigCodeConfig(vocab_size=vocab, **_GPT),
        "OPT": lambda: t.OPTConfig(vocab_size=vocab, hidden_size=32, ffn_dim=64, num_hidden_layers=2,
                                   num_attention_heads=2, max_position_embeddings=128, word_embed_proj_dim=16),
        "Gemma 2": lambda: t.Gemma2Config(vocab_size=vocab, head_dim=16, final_logit_softcapping=30.0, **kv),
        "Gemma 3": lambda: t.Gemma3TextConfig(vocab_size=vocab, head_dim=16, final_logit_softcapping=30.0, **kv),
        "OLMo 2": lambda: t.Olmo2Config(vocab_size=vocab, **kv),
        "StableLM": lambda: t.StableLmConfig(vocab_size=vocab, **kv),
        "Falcon": lambda: t.FalconConfig(vocab_size=vocab, hidden_size=32, num_hidden_layers=2, num_attention_heads=2),
        "CodeGen": lambda: t.CodeGenConfig(vocab_size=vocab, n_ctx=128, rotary_dim=4, **{**_GPT, "n_head": 4}),
        "GPT-J": lambda: t.GPTJConfig(vocab_size=vocab, rotary_dim=8, **_GPT),
        "Cohere": lambda: t.CohereConfig(vocab_size=vocab, logit_scale=0.5, **kv),
        "Granite": lambda: t.GraniteConfig(vocab_size=vocab, logits_scaling=4.0, embedding_multiplier=2.0,
                                           residual_multiplier=0.5, attention_multiplier=0.3, **kv),
    }


FAMILIES = tuple(_configs(8))
#: Families whose layer 0 input adds absolute position embeddings to the token embeddings.
ABSOLUTE_POSITIONS = frozenset({"GPT-2", "GPTBigCode", "OPT"})


def tokenizer() -> tuple[Any, str]:
    """SmolLM2's tokenizer (module doc), and its name for the table."""
    from transformers import AutoTokenizer

    from asc import gguf_cache
    from asc.errors import ModelLoadError
    from asc.models import EMBEDDED

    try:
        path = EMBEDDED["smollm2-135m"].locate()  # type: ignore[misc]
    except ModelLoadError:
        from tests.support.models import tiny_random_model

        return tiny_random_model().tokenizer, "the tests' tiny BPE tokenizer (SmolLM2 is not installed)"
    entry = gguf_cache.entry_for(path)
    if entry is not None and (entry / "tokenizer.json").is_file():
        return AutoTokenizer.from_pretrained(entry), "SmolLM2-135M's tokenizer"
    return AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name), "SmolLM2-135M's tokenizer"


def build(family: str, tok: Any) -> Any:
    """The family's tiny random model as a :class:`~asc.models.ModelBundle` (seed 0)."""
    import torch
    from transformers import AutoModelForCausalLM
    from transformers.utils import logging as hf_logging

    from asc.models import make_bundle

    verbosity = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # the configs' default special ids lie outside a small vocabulary: harmless
    try:
        with torch.random.fork_rng():
            torch.manual_seed(0)
            model = AutoModelForCausalLM.from_config(_configs(len(tok))[family]())
    finally:
        hf_logging.set_verbosity(verbosity)
    return make_bundle(f"tiny-{family}", model, tok, "in-process")


# ----------------------------------------------------------------------------------------------- the checks

def _ids(bundle: Any) -> np.ndarray:
    from asc.scores import encode

    return encode(bundle, SNIPPET)[0]


def _logprobs(bundle: Any, ids: np.ndarray) -> np.ndarray:
    """log p(token i | tokens before) (T - 1,) from one plain forward pass of the model."""
    import torch

    from asc.arch import log_probs

    with torch.inference_mode():
        x = torch.from_numpy(ids)[None]
        lp = log_probs(bundle.model(input_ids=x, use_cache=False).logits[0, :-1])
        return lp.gather(1, x[0, 1:, None])[:, 0].double().numpy()


def check_scores(bundle: Any) -> str:
    """AsC-Eval on the snippet: every predicted token scored, equal to a plain forward pass's log-probabilities."""
    from asc.explain import explain

    ex = explain(bundle, SNIPPET)
    has = ex.scores.has_prediction
    assert has.sum() >= len(has) - 1 and np.isfinite(ex.scores.logprob[has]).all(), "tokens left unscored"
    gap = float(np.abs(ex.scores.logprob[1:] - _logprobs(bundle, ex.scores.ids)).max())
    assert gap < 1e-5, f"scores differ from the forward pass by {gap:.2g}"
    assert np.isfinite(ex.values[~np.isnan(ex.values)]).all() and (~np.isnan(ex.values)).any(), "no node value"
    return f"{len(has)} tokens"


def check_lens(bundle: Any) -> str:
    """The logit lens's last layer equals the model's output within 1e-5 (ranks too)."""
    from asc.lens import lens_scores
    from asc.scores import score_text

    lens, scores = lens_scores(bundle, SNIPPET, exact=True), score_text(bundle, SNIPPET)
    has = scores.has_prediction
    gap = float(np.abs(lens.logprob[-1][has] - scores.logprob[has]).max())
    assert gap < 1e-5, f"the last layer differs from the output by {gap:.2g}"
    assert np.array_equal(lens.rank[-1], scores.rank), "the last layer's ranks differ from the output's"
    assert lens.n_layers == bundle.n_layers + 1 and np.isfinite(lens.logprob[:, has]).all()
    return f"max gap {gap:.0e}"


def _target(bundle: Any) -> tuple[Any, Any]:
    from asc.explain import explain
    from asc.why.targets import token_target

    ex = explain(bundle, SNIPPET)
    return ex, token_target(bundle, ex, ex.scores.n_tokens - 2)  # "total" of the return: the longest prompt


def check_grad(bundle: Any) -> str:
    """Gradient x input runs; its value is the target's log-probability."""
    from asc.why.attribute import attribute

    ex, target = _target(bundle)
    got = attribute(bundle, SNIPPET, target, "grad", explanation=ex)
    assert abs(got.value - target.logprob) < 1e-4, f"value {got.value} against {target.logprob}"
    assert np.isfinite(got.token_attr[: target.index]).all(), "a prompt token without attribution"
    return "value = log p"


def check_ig(bundle: Any) -> str:
    """Integrated gradients are complete: the attributions sum to f(x) - f(baseline) within 1%
    (:data:`asc.why.attribute.AUTO_TOLERANCE`; ``steps="auto"``)."""
    from asc.why.attribute import AUTO_TOLERANCE, attribute

    ex, target = _target(bundle)
    got = attribute(bundle, SNIPPET, target, "ig", steps="auto", explanation=ex)
    assert abs(got.value - target.logprob) < 1e-4, f"value {got.value} against {target.logprob}"
    assert got.relative_gap <= AUTO_TOLERANCE, f"completeness gap {got.relative_gap:.1%} at {got.steps} points"
    return f"gap {got.relative_gap:.1%} ({got.steps} pts)"


def check_occlusion(bundle: Any) -> str:
    """Occlusion runs (its variants from the clean run's KV cache); its value is the target's log-probability."""
    from asc.why.attribute import attribute

    ex, target = _target(bundle)
    got = attribute(bundle, SNIPPET, target, "occlusion", explanation=ex)
    assert abs(got.value - target.logprob) < 1e-4, f"value {got.value} against {target.logprob}"
    assert np.isfinite(got.node_attr[~np.isnan(got.node_attr)]).all() and got.steps > 0, "no variant ran"
    return f"{got.steps} variants"


def check_patching(bundle: Any) -> str:
    """Activation patching: the whole clean residual stream patched into the corrupted run, at every layer,
    restores the clean value (1e-5), by the cached method (where the layers replay) and by hooks."""
    from asc.arch import model_insides
    from asc.why.residual import record

    clean_ids = _ids(bundle)
    bad_ids = clean_ids.copy()
    bad_ids[3] = (bad_ids[3] + 1) % len(bundle.tokenizer)
    t, token = len(clean_ids) - 2, int(clean_ids[-1])
    methods = ["cached", "hooks"] if model_insides(bundle).replayable else ["hooks"]
    for method in methods:
        clean, bad = record(bundle, clean_ids, method), record(bundle, bad_ids, method)
        assert abs(clean.logprobs[t] - bad.logprobs[t]) > 1e-7, "the corruption does not move the target"
        every = np.arange(len(clean_ids))
        for layer in range(bad.n_layers):
            got = bad.run(layer, [(every, clean.inputs[layer])], t, token)[0]
            assert abs(got - clean.logprobs[t]) < 1e-5, f"{method}, layer {layer}: {got} against {clean.logprobs[t]}"
    return " + ".join(methods)


def check_kv_cache(bundle: Any) -> str:
    """A branch continued from the KV cache equals the uncached greedy continuation, token for token, and a
    continuation from a cut cache (input embeddings, two rows, as occlusion's variants) the uncached logits."""
    import torch

    from asc.arch import embed
    from asc.branching.branches import branch
    from asc.kvcache import continue_from, prefix_rows, run_prefix

    ids = _ids(bundle)
    at, new = len(ids) - 3, 4
    got = branch(bundle, SNIPPET, at, choose=2, max_new_tokens=new, stop_at_function_end=False)
    special = set(bundle.tokenizer.all_special_ids)
    with torch.inference_mode():
        seq = [int(i) for i in ids[:at]]
        logits = bundle.model(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1]
        seq.append(int(logits.topk(2).indices[-1]))
        while len(seq) < at + new:
            nxt = int(bundle.model(input_ids=torch.tensor([seq]), use_cache=False).logits[0, -1].argmax())
            if nxt in special:
                break
            seq.append(nxt)
        assert got.completion.ids.tolist() == seq, f"cached {got.completion.ids[at:]} against uncached {seq[at:]}"
        x, start = torch.from_numpy(ids)[None], 5
        full = bundle.model(input_ids=x, use_cache=False).logits[0, start:].float()
        _, past = run_prefix(bundle.model, x[:, :start])
        rest = embed(bundle, x[:, start:]).expand(2, -1, -1)
        pos = torch.arange(start, len(ids))[None].expand(2, -1)
        cont = continue_from(bundle.model, prefix_rows(past, start, 2), inputs_embeds=rest, position_ids=pos)[0]
        gap = float((cont.float() - full).abs().max())
    assert gap < 1e-4, f"the continuation from the cut cache differs by {gap:.2g}"
    return "branch = uncached"


def check_embeddings(bundle: Any, family: str) -> str:
    """The adapter's embeddings: ``embed`` is the embedding module's output and, without absolute positions,
    layer 0's input is a matrix row times ``embedding_scale``."""
    import torch

    from asc.arch import embed, model_insides
    from asc.why.residual import record

    parts = model_insides(bundle)
    ids = _ids(bundle)
    x = torch.from_numpy(ids)[None]
    with torch.inference_mode():
        rows = parts.embeddings.weight[x]
        module = embed(bundle, x)
    assert torch.allclose(module * parts.input_scale, rows * parts.embedding_scale, atol=1e-6), "embed() is off"
    if family not in ABSOLUTE_POSITIONS:
        first = record(bundle, ids, "hooks").inputs[0]
        assert torch.allclose(first, rows[0] * parts.embedding_scale, atol=1e-5), "layer 0's input is off"
    return f"scale {parts.embedding_scale:g}" if not math.isclose(parts.embedding_scale, 1.0) else "scale 1"


#: The feature checks, in the table's column order: (column, check).
CHECKS: tuple[tuple[str, Callable[..., str]], ...] = (
    ("AsC-Eval scores", check_scores), ("logit lens", check_lens), ("grad x input", check_grad),
    ("integrated gradients", check_ig), ("occlusion", check_occlusion), ("patching", check_patching),
    ("KV-cache branch", check_kv_cache), ("embeddings", check_embeddings))


def run_check(name: str, bundle: Any, family: str) -> str:
    """Run the check of column ``name`` on ``bundle``."""
    check = dict(CHECKS)[name]
    return check(bundle, family) if check is check_embeddings else check(bundle)


def model_types() -> dict[str, str]:
    """Each family's ``model_type`` (from its config alone: nothing is built)."""
    return {family: make().model_type for family, make in _configs(8).items()}
