"""asc.scores with the tiny random model (64-token context): every number is checked against an
independent forward pass, never against hard-coded outputs of the random weights."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from asc.errors import InputError
from asc.scores import TOP_K, _plan_windows, score_ids, score_text, score_texts

COUNT = "def countChars(string, character):\n    count = 0\n    return count\n"
NON_ASCII = 'def größe(x):\n    s = "héllo ✓"\n    return s\n'
TIE = 1e-6  # logits closer than this may be ordered either way by different kernels

LONG = "def long_function(values):\n" + "".join(
    f"    total_{i} = values[{i}] * {i} + {i * 7}\n" for i in range(7)) + "    return total_0\n"


# ---------------------------------------------------------------------------------------------- helpers


def encode(bundle, source):
    enc = bundle.tokenizer(source, return_offsets_mapping=True, return_special_tokens_mask=True)
    off = np.asarray(enc["offset_mapping"], dtype=np.int64).reshape(-1, 2)
    return (np.asarray(enc["input_ids"], dtype=np.int64), off[:, 0], off[:, 1],
            np.asarray(enc["special_tokens_mask"], dtype=bool))


def log_softmax(bundle, ids):
    """(len(ids), V) float64 log-probabilities from one plain forward pass over ``ids``."""
    with torch.inference_mode():
        logits = bundle.model(torch.as_tensor(np.asarray(ids), dtype=torch.long)[None]).logits[0]
    return torch.log_softmax(logits.double(), dim=-1).numpy()


def check_position(bundle, scores, i, lsm_row, atol=1e-5):
    """Compare every statistic of token ``i`` with the predicted distribution ``lsm_row``."""
    target = int(scores.ids[i])
    assert scores.logprob[i] == pytest.approx(lsm_row[target], abs=atol)
    assert scores.prob[i] == pytest.approx(math.exp(lsm_row[target]), abs=atol)
    p = np.exp(lsm_row)
    assert scores.entropy[i] == pytest.approx(float(-(p * lsm_row).sum()), abs=atol)
    # rank: 1 + number of ids more likely than the target (ties within TIE are left open either way)
    lt = lsm_row[target]
    assert 1 + int((lsm_row > lt + TIE).sum()) <= scores.rank[i] <= int((lsm_row > lt - TIE).sum())
    # top-k: the k most likely ids, most likely first, with their probabilities
    top = scores.top_ids[i]
    assert len(set(top.tolist())) == TOP_K
    expected_top = np.sort(p)[::-1][:TOP_K]
    assert np.allclose(scores.top_probs[i], expected_top, atol=atol)
    assert np.allclose(scores.top_probs[i], p[top], atol=atol)
    assert np.all(lsm_row[top] >= np.log(expected_top[-1]) - TIE)
    assert scores.top_text[i] == tuple(bundle.tokenizer.decode([int(t)]) for t in top)


def assert_same_scores(a, b, atol=1e-5):
    assert a.source == b.source
    for name in ("ids", "start", "end", "special", "rank"):
        assert np.array_equal(getattr(a, name), getattr(b, name)), name
    for name in ("prob", "logprob", "entropy", "top_probs"):
        assert np.allclose(getattr(a, name), getattr(b, name), atol=atol, equal_nan=True), name
    assert np.array_equal(a.top_ids, b.top_ids)
    assert a.top_text == b.top_text
    assert a.n_windows == b.n_windows


# ---------------------------------------------------------------------------------------------- one window


@pytest.mark.parametrize("source", [COUNT, NON_ASCII])
def test_scores_equal_independent_computation(tiny, source):
    s = score_text(tiny, source)
    ids, start, end, special = encode(tiny, source)
    assert np.array_equal(s.ids, ids) and np.array_equal(s.start, start) and np.array_equal(s.end, end)
    assert not special.any()
    assert s.n_windows == 1
    assert 1 < s.n_tokens <= tiny.context_length
    lsm = log_softmax(tiny, ids)
    for i in range(1, s.n_tokens):
        check_position(tiny, s, i, lsm[i - 1])  # token i is predicted from position i-1


def test_array_shapes_and_types(tiny):
    s = score_text(tiny, COUNT)
    n = s.n_tokens
    for name in ("ids", "start", "end", "special", "prob", "logprob", "entropy", "rank"):
        assert getattr(s, name).shape == (n,), name
    assert s.top_ids.shape == (n, TOP_K) and s.top_probs.shape == (n, TOP_K)
    assert len(s.top_text) == n
    assert s.rank.dtype == np.int64 and s.ids.dtype == np.int64
    assert s.text == tuple(COUNT[a:b] for a, b in zip(s.start.tolist(), s.end.tolist(), strict=True))
    assert "".join(s.text) == COUNT


def test_position_zero_has_no_prediction_without_bos(tiny):
    assert not tiny.adds_bos
    s = score_text(tiny, COUNT)
    assert math.isnan(s.prob[0]) and math.isnan(s.logprob[0]) and math.isnan(s.entropy[0])
    assert s.rank[0] == 0
    assert s.top_ids[0].tolist() == [-1] * TOP_K
    assert np.isnan(s.top_probs[0]).all()
    assert s.top_text[0] == ()
    assert not s.has_prediction[0]
    assert s.has_prediction[1:].all()
    assert np.all(s.rank[1:] >= 1)
    assert np.all((s.prob[1:] > 0) & (s.prob[1:] <= 1))


def test_bos_is_special_and_token_one_is_predicted(tiny_bos):
    assert tiny_bos.adds_bos
    s = score_text(tiny_bos, COUNT)
    assert s.special[0] and not s.special[1:].any()
    assert (s.start[0], s.end[0]) == (0, 0)
    assert math.isnan(s.prob[0]) and s.rank[0] == 0
    assert s.has_prediction[1:].all()
    lsm = log_softmax(tiny_bos, s.ids)
    for i in range(1, s.n_tokens):
        check_position(tiny_bos, s, i, lsm[i - 1])  # token 1 is predicted from the BOS


def test_loss_is_mean_negative_logprob(tiny, tiny_bos):
    for bundle in (tiny, tiny_bos):
        s = score_text(bundle, COUNT)
        predicted = s.logprob[~np.isnan(s.logprob)]
        assert len(predicted) == s.n_tokens - 1
        assert s.loss == pytest.approx(float(-predicted.mean()), abs=1e-12)
        ids = encode(bundle, COUNT)[0]
        lsm = log_softmax(bundle, ids)
        expected = -np.mean([lsm[i - 1, ids[i]] for i in range(1, len(ids))])
        assert s.loss == pytest.approx(expected, abs=1e-5)


def test_single_token_and_empty_inputs(tiny, tiny_bos):
    s = score_text(tiny, "x")
    assert s.n_tokens == 1 and math.isnan(s.prob[0]) and math.isnan(s.loss)
    empty = score_text(tiny, "")
    assert empty.n_tokens == 0 and math.isnan(empty.loss)
    b = score_text(tiny_bos, "x")  # BOS + one token: that token is predicted
    assert b.n_tokens == 2 and not math.isnan(b.prob[1])


def test_non_text_rejected(tiny):
    with pytest.raises(InputError):
        score_texts(tiny, ["x = 1", b"y = 2"])  # type: ignore[list-item]


def test_window_too_short(tiny):
    with pytest.raises(InputError):
        score_text(tiny, COUNT, max_window=1)


class _MaskedLogits(torch.nn.Module):
    """Wraps a causal LM and sets the last vocabulary entries' logits to -inf (as models that mask
    unused or forbidden ids do): those entries have probability 0 and add nothing to the entropy."""

    def __init__(self, model, n_masked=3):
        super().__init__()
        self.inner = model
        self.config = model.config
        self.n_masked = n_masked

    def forward(self, **kwargs):
        out = self.inner(**kwargs)
        out.logits[..., -self.n_masked :] = float("-inf")
        return out


def test_entropy_is_finite_when_some_logits_are_minus_inf(tiny):
    from asc.models import ModelBundle

    masked = ModelBundle(name="masked", model=_MaskedLogits(tiny.model), tokenizer=tiny.tokenizer,
                         source="in-process", context_length=tiny.context_length)
    s = score_text(masked, COUNT)
    assert np.isfinite(s.prob[1:]).all()
    with torch.inference_mode():
        logits = masked.model(input_ids=torch.as_tensor(s.ids)[None]).logits[0].double()
    lsm = torch.log_softmax(logits, -1).numpy()
    for i in range(1, s.n_tokens):
        row = lsm[i - 1]
        p = np.exp(row)
        expected = float(-(p[p > 0] * row[p > 0]).sum())  # 0 * log 0 = 0
        assert s.entropy[i] == pytest.approx(expected, abs=1e-5)


# ---------------------------------------------------------------------------------------------- windows


@pytest.mark.parametrize("n,window", [(1, 8), (2, 8), (8, 8), (9, 8), (17, 8), (100, 8), (200, 64), (65, 64),
                                      (1000, 64), (50, 3), (50, 2), (31, 7)])
def test_plan_windows(n, window):
    plans = _plan_windows(n, window)
    scored = []
    for k, (begin, first, end) in enumerate(plans):
        assert 0 <= begin < first <= end <= n
        assert end - begin <= window
        if n > window:
            assert end - begin == window  # windows of equal length
        if k > 0:
            assert first - begin >= window // 2  # left context of the first scored token
            assert begin > plans[k - 1][0]
        scored.extend(range(first, end))
    if n >= 2:
        assert sorted(scored) == list(range(1, n)), "positions 1..n-1 are each scored exactly once"
    if n <= window:
        assert len(plans) == 1


def test_long_snippet_uses_windows(tiny):
    s = score_text(tiny, LONG)
    n, window = s.n_tokens, tiny.context_length
    assert 150 <= n <= 400, n
    plans = _plan_windows(n, window)
    assert s.n_windows == len(plans) > 1
    assert np.isnan(s.prob[0])
    assert np.isfinite(s.prob[1:]).all() and np.all(s.rank[1:] >= 1)
    seen = np.zeros(n, dtype=int)
    for k, (begin, first, end) in enumerate(plans):
        lsm = log_softmax(tiny, s.ids[begin:end])  # the exact window that scored these tokens
        for i in range(first, end):
            seen[i] += 1
            if k > 0:
                assert i - begin >= window // 2
            check_position(tiny, s, i, lsm[i - begin - 1])
    assert seen[0] == 0 and np.all(seen[1:] == 1)


def test_max_window_caps_the_context(tiny):
    s = score_text(tiny, COUNT, max_window=8)
    plans = _plan_windows(s.n_tokens, 8)
    assert s.n_windows == len(plans) > 1
    for begin, first, end in plans:
        lsm = log_softmax(tiny, s.ids[begin:end])
        for i in range(first, end):
            check_position(tiny, s, i, lsm[i - begin - 1])


def test_windows_with_bos(tiny_bos):
    s = score_text(tiny_bos, LONG)
    assert s.n_windows > 1
    assert s.special[0] and np.isnan(s.prob[0])
    assert np.isfinite(s.prob[1:]).all()
    for begin, first, end in _plan_windows(s.n_tokens, tiny_bos.context_length):
        lsm = log_softmax(tiny_bos, s.ids[begin:end])
        for i in (first, end - 1):
            check_position(tiny_bos, s, i, lsm[i - begin - 1])


# ---------------------------------------------------------------------------------------------- batching


def test_batch_equals_single(tiny):
    sources = ["x = 1\n", COUNT, LONG, NON_ASCII]  # different lengths, one needing several windows
    batch = score_texts(tiny, sources)
    assert len(batch) == len(sources)
    for src, got in zip(sources, batch, strict=True):
        assert_same_scores(got, score_text(tiny, src))


def test_batch_with_bos_equals_single(tiny_bos):
    sources = [COUNT, "y = 2\n", NON_ASCII]
    for src, got in zip(sources, score_texts(tiny_bos, sources), strict=True):
        assert_same_scores(got, score_text(tiny_bos, src))


def test_small_logit_budget_splits_batches(tiny, monkeypatch):
    import asc.scores as scores_mod

    sources = [COUNT, NON_ASCII, LONG]
    reference = score_texts(tiny, sources)
    monkeypatch.setattr(scores_mod, "logit_budget", lambda device: 1)  # one row per forward pass and stats chunk
    for a, b in zip(score_texts(tiny, sources), reference, strict=True):
        assert_same_scores(a, b)


# ---------------------------------------------------------------------------------------------- score_ids


@pytest.mark.parametrize("source", [COUNT, NON_ASCII, LONG])
def test_score_ids_equals_score_text(tiny, tiny_bos, source):
    for bundle in (tiny, tiny_bos):
        ids, start, end, special = encode(bundle, source)
        by_ids = score_ids(bundle, source, ids.tolist(), start.tolist(), end.tolist())  # special inferred
        assert_same_scores(by_ids, score_text(bundle, source))
        explicit = score_ids(bundle, source, ids, start, end, special)
        assert_same_scores(explicit, score_text(bundle, source))


# ---------------------------------------------------------------------------------------------- device statistics


def numpy_reference(logits, targets, k):
    """Next-token statistics the straightforward way, in float64 numpy on the host."""
    x = logits.astype(np.float64)
    lsm = x - x.max(-1, keepdims=True)
    lsm = lsm - np.log(np.exp(lsm).sum(-1, keepdims=True))
    rows = np.arange(len(targets))
    lp = lsm[rows, targets]
    ent = -(np.exp(lsm) * lsm).sum(-1)
    rank = 1 + (lsm > lp[:, None]).sum(-1)
    top = np.argsort(-lsm, axis=-1, kind="stable")[:, :k]
    return lp, ent, rank, top, np.exp(np.take_along_axis(lsm, top, -1))


@pytest.mark.parametrize("budget", [1, 10**9])
def test_device_stats_equal_numpy_reference(tiny, budget):
    from asc.scores import token_stats

    ids, *_ = encode(tiny, COUNT)
    with torch.inference_mode():
        logits = tiny.model(torch.as_tensor(ids)[None]).logits[0, :-1]
    targets = torch.as_tensor(ids[1:])
    ref = numpy_reference(logits.numpy().copy(), ids[1:], TOP_K)
    got = token_stats(logits.clone(), targets, TOP_K, budget)  # budget 1: one row per chunk
    assert all(isinstance(a, np.ndarray) for a in got)
    for name, a, b in zip(("logprob", "entropy", "top_probs"), (got[0], got[1], got[4]), (ref[0], ref[1], ref[4]),
                          strict=True):
        assert np.allclose(a, b, atol=1e-6, rtol=0), name
    assert np.array_equal(got[2], ref[2])
    assert np.array_equal(got[3], ref[3])


def test_batches_follow_a_token_budget():
    from asc.scores import _plan_batches

    rows = [(np.arange(n), 1) for n in (5, 40, 12, 38, 3)]
    plans = _plan_batches(rows, 80)
    assert plans == [[1, 3], [2, 0, 4]]  # sorted by length: 40+38 pad to 80 tokens, then 12 x 3 = 36
    assert _plan_batches(rows, 1) == [[1], [3], [2], [0], [4]]  # at least one row per batch


@pytest.mark.parametrize("error", [RuntimeError("CUDA out of memory. Tried to allocate 2 GiB"),
                                   torch.cuda.OutOfMemoryError("CUDA out of memory")])
def test_out_of_memory_halves_the_batch_and_retries(tiny, error):
    import dataclasses

    class FlakyModel:  # the tiny model, raising an out-of-memory error on its first call
        def __init__(self, model):
            self.model, self.config, self.device, self.calls = model, model.config, model.device, []

        def __call__(self, **kwargs):
            self.calls.append(kwargs["input_ids"].shape[0])
            if len(self.calls) == 1:
                raise error
            return self.model(**kwargs)

    sources = [COUNT, NON_ASCII, "y = 2\n"]
    reference = score_texts(tiny, sources)
    flaky = FlakyModel(tiny.model)
    got = score_texts(dataclasses.replace(tiny, model=flaky), sources)
    assert flaky.calls == [3, 1, 2]  # the batch of three failed, then ran as 1 + 2
    for a, b in zip(got, reference, strict=True):
        assert_same_scores(a, b)


def test_out_of_memory_on_one_row_names_the_fix(tiny):
    import dataclasses

    from asc.errors import ModelLoadError

    class OomModel:
        config, device = tiny.model.config, tiny.model.device

        def __call__(self, **kwargs):
            raise RuntimeError("out of memory")

    with pytest.raises(ModelLoadError, match="max-window"):
        score_texts(dataclasses.replace(tiny, model=OomModel()), [COUNT])


def test_other_runtime_errors_are_not_retried(tiny):
    import dataclasses

    class Broken:
        config, device = tiny.model.config, tiny.model.device

        def __call__(self, **kwargs):
            raise RuntimeError("shape mismatch")

    with pytest.raises(RuntimeError, match="shape mismatch"):
        score_texts(dataclasses.replace(tiny, model=Broken()), [COUNT, NON_ASCII])


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_stats_on_cuda_equal_cpu(tiny):
    from asc.scores import token_stats

    ids, *_ = encode(tiny, COUNT)
    with torch.inference_mode():
        logits = tiny.model(torch.as_tensor(ids)[None]).logits[0, :-1]
    targets = torch.as_tensor(ids[1:])
    cpu = token_stats(logits.clone(), targets, TOP_K, 2**20)
    gpu = token_stats(logits.clone().cuda(), targets.cuda(), TOP_K, 2**20)
    for a, b in zip(cpu, gpu, strict=True):
        assert np.allclose(a, b, atol=1e-5)


def test_a_model_vocabulary_larger_than_the_tokenizer_names_the_extra_ids():
    """Output layers padded past the tokenizer (Qwen2.5: 151,936 rows, 151,665 tokens) can put an id no token has in
    the top-k: it reads ``<id N>`` instead of breaking the scoring (the GPU report's random models found it)."""
    import dataclasses

    from asc.scores import vocab_text
    from tests.support.models import tiny_random_model

    bundle = tiny_random_model(seed=3)
    n = len(bundle.tokenizer)
    bundle.model.resize_token_embeddings(n + 64)
    with torch.no_grad():  # make the padded rows the model's favourite predictions
        bundle.model.get_output_embeddings().weight[n:] = bundle.model.get_output_embeddings().weight[:64] * 50
    scores = score_text(dataclasses.replace(bundle), COUNT)
    extra = [t for row in scores.top_text for t in row if t.startswith("<id ")]
    assert extra and all(n <= int(t[4:-1]) < n + 64 for t in extra)
    assert vocab_text(bundle.tokenizer)[n] == f"<id {n}>"
