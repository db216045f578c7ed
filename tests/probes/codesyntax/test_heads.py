"""CodeSyntax head scores and baselines (probes/codesyntax/heads.py): exact numbers on hand-made attention."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from probes.codesyntax.heads import (
    KEYWORDS,
    METRICS,
    HeadScorer,
    baseline_scores,
    split_samples,
    word_attention,
)
from probes.codesyntax.relations import extract
from probes.codesyntax.samples import RELATIONS, Sample

SNIPPETS = [
    "def f(a, b=1):\n    if a > b:\n        return a + b\n    elif a:\n        x = a.y\n    else:\n        x = -a\n"
    "    return x\n",
    "for i in range(10):\n    total += i * 2\n    print(i, end='')\n",
    "while n > 0 and ok:\n    n = n - 1\nd = {'a': 1, 'b': n}\ny = d['a'][1:3]\n",
    "try:\n    v = g(x)\nexcept ValueError:\n    v = None\nelse:\n    v += 1\nfinally:\n    close()\n",
    "with open(p) as fh:\n    data = [line.strip() for line in fh if line]\n"
    "s = {c for c in data}\nm = {k: v for k, v in pairs}\nz = (q for q in s)\nw = a if b else c\n",
]

L, H = 3, 4  # layers, heads of the synthetic tensors
GOOD = (1, 2)  # the head that follows the gold edges


@pytest.fixture(scope="module")
def samples() -> list[Sample]:
    return [extract(code) for code in SNIPPETS]


def fake(tokens: list[str], edges: list[tuple[int, int, int]], name: str = "R") -> Sample:
    return Sample(code=" ".join(tokens), tokens=tuple(tokens), spans=tuple((0, 0) for _ in tokens),
                  relns={name: tuple(edges)})


# ---------------------------------------------------------------- word_attention


def test_word_attention_exact():
    # sub-tokens: [CLS] (dropped), "fo" "o" (word 0), "bar" (word 1)
    attn = np.array([[0.1, 0.2, 0.3, 0.4],
                     [0.5, 0.1, 0.1, 0.3],
                     [0.2, 0.2, 0.2, 0.4],
                     [0.0, 0.25, 0.5, 0.25]], dtype=np.float32)[None, None]  # fmt: skip
    w = word_attention(attn, [-1, 0, 0, 1], 2)
    assert w.shape == (1, 1, 2, 2) and w.dtype == np.float32
    # FROM word 0 = mean of rows 1, 2; TO word 1 = column 3: (0.3 + 0.4) / 2
    assert w[0, 0, 0, 1] == pytest.approx(0.35)
    # FROM word 1 = row 3; TO word 0 = columns 1 + 2: 0.25 + 0.5
    assert w[0, 0, 1, 0] == pytest.approx(0.75)
    assert w[0, 0, 0, 0] == 0.0 and w[0, 0, 1, 1] == 0.0


def test_word_attention_matches_assignment_matrix():
    rng = np.random.default_rng(1)
    attn = rng.random((2, 3, 7, 7)).astype(np.float32)
    sub_to_word = np.array([-1, 2, 0, 2, 2, -1, 0])  # non-contiguous words; word 1 and 3 have no sub-token
    w = word_attention(attn, sub_to_word, 4)
    assign = np.zeros((4, 7))
    assign[sub_to_word[sub_to_word >= 0], np.flatnonzero(sub_to_word >= 0)] = 1
    mean_rows = assign / np.maximum(assign.sum(1, keepdims=True), 1)
    expected = mean_rows @ attn.astype(np.float64) @ assign.T
    expected[:, :, range(4), range(4)] = 0
    np.testing.assert_allclose(w, expected, rtol=1e-6)
    assert not w[:, :, 1].any() and not w[:, :, :, 3].any()


def test_word_attention_rejects_bad_input():
    with pytest.raises(ValueError):
        word_attention(np.zeros((1, 1, 3, 3)), [0, 1], 2)
    with pytest.raises(ValueError):
        word_attention(np.zeros((1, 1, 2, 2)), [0, 2], 2)
    with pytest.raises(ValueError):
        word_attention(np.zeros((1, 3, 3)), [0, 1, 2], 3)


# ---------------------------------------------------------------- head scores


def noise(n: int, rng: np.random.Generator, causal: bool) -> np.ndarray:
    wa = rng.uniform(0.1, 1.0, size=(L, H, n, n))  # not causal-masked, so no row is left all zero
    wa[:, :, range(n), range(n)] = 0
    return wa


def perfect(sample: Sample, name: str, rng: np.random.Generator, causal: bool) -> tuple[np.ndarray, int]:
    """Noise everywhere except head GOOD, whose rows point at the gold edges of ``name`` (first metric).

    Other heads give the gold targets 0, so they never hit at k=1. Returns the tensor and the most
    distinct targets one row has (a row with m targets needs k = m)."""
    n = len(sample.tokens)
    wa = noise(n, rng, causal)
    targets: dict[int, list[int]] = defaultdict(list)
    for h, s, _ in sample.relns[name]:
        row, tgt = (s, h) if causal else (h, s)
        if tgt not in targets[row]:
            targets[row].append(tgt)
    wa[GOOD] = 0
    for row, tgts in targets.items():
        wa[:, :, row, tgts] = 0
        wa[GOOD][row, tgts] = 1.0 - 0.1 * np.arange(len(tgts))
    return wa, max((len(t) for t in targets.values()), default=0)


@pytest.mark.parametrize("causal", [False, True])
def test_perfect_head_found(samples, causal):
    rng = np.random.default_rng(0)
    names = [r for r in RELATIONS if any(s.relns[r] for s in samples)]
    assert len(names) >= 30
    single = 0  # relations whose head words each have one target: the exact top-1 checks below apply
    for name in names:
        scorer = HeadScorer(relations=(name,), causal=causal)
        need = 1
        for i, sample in enumerate(samples):
            wa, m = perfect(sample, name, rng, causal)
            need = max(need, m)
            scorer.add(sample, wa, "val" if i % 2 else "test")
            scorer.add(sample, wa, "test" if i % 2 else "val")
        res = scorer.result()
        test = res.score("test")[0, 0]  # first metric: (K, L, H)
        assert test[need - 1][GOOD] == 1.0, name
        if need == 1:
            single += 1
            assert test[0].max() == 1.0 and (test[0] < 1.0).sum() == L * H - 1, name
            best = res.best_heads()
            assert (best.layer[0], best["head"][0]) == GOOD, name
            assert res.model_score() == 1.0
    assert single >= len(names) // 2, (single, len(names))  # the exact checks ran for most relations
    # with several relations, a head word may have different dependents: children has multi-target rows
    assert any(len({s for h, s, _ in smp.relns["children:parent->child"] if h == h0}) > 1
               for smp in samples for h0, _, _ in smp.relns["children:parent->child"])


def test_perfect_head_model_score(samples):
    """One scorer over the relations whose rows all have one target: best head = GOOD for each, mean = 1."""
    rng = np.random.default_rng(3)
    names = [r for r in RELATIONS if any(s.relns[r] for s in samples)]
    single = [r for r in names if all(perfect(s, r, rng, False)[1] <= 1 for s in samples)]
    assert len(single) >= 20
    scorer = HeadScorer(relations=single, ks=(1, 3))
    for sample in samples:
        for split in ("val", "test"):
            n = len(sample.tokens)
            wa = noise(n, rng, False)
            wa[GOOD] = 0
            for r in single:
                for h, s, _ in sample.relns[r]:
                    wa[:, :, h, s] = 0
            # one relation per head word wins: rows may differ by relation, so score each relation on its own tensor
            for r in single:
                one = wa.copy()
                for h, s, _ in sample.relns[r]:
                    one[GOOD][h, s] = 1.0
                sub = Sample(sample.code, sample.tokens, sample.spans, {r: sample.relns[r]})
                scorer.add(sub, one, split)
    best = scorer.result().best_heads(k=1)
    assert len(best) == sum(1 for r in single if any(s.relns[r] for s in samples))
    assert (best.layer == GOOD[0]).all() and (best["head"] == GOOD[1]).all()
    assert (best.val_score == 1.0).all() and (best.test_score == 1.0).all()
    assert scorer.result().model_score(k=1) == 1.0


@pytest.mark.parametrize(("causal", "lower"), [(False, False), (True, False), (True, True)])
def test_uniform_attention_analytic(samples, causal, lower):
    """Uniform rows: ties go to lower indices, so the top-k of row r are the k lowest indices other than r."""
    ks = (1, 2, 3, 5, 10)
    scorer = HeadScorer(ks=ks, causal=causal)
    expected = {sp: defaultdict(lambda: np.zeros((3, len(ks)))) for sp in ("val", "test")}
    count = {sp: defaultdict(int) for sp in ("val", "test")}
    for i, sample in enumerate(samples):
        n = len(sample.tokens)
        wa = np.ones((2, 2, n, n))
        if lower:  # causal-style uniform: only earlier words; the rank of an earlier word is unchanged
            wa = np.tril(wa)
        split = ("val", "test")[i % 2]
        scorer.add(sample, wa, split)
        for r, edges in sample.relns.items():
            for h, s, e in edges:
                count[split][r] += 1
                for ki, k in enumerate(ks):
                    if causal:  # rank of h in any later row is h (words 0..h-1 before it)
                        got = (h < k, h < k, h < k)
                    else:  # rank of s in row h < s is s - 1 (0..s-1 without h)
                        got = (s - 1 < k, e - 1 < k, s - 1 < k)
                    expected[split][r][:, ki] += got
    res = scorer.result()
    for split in ("val", "test"):
        score = res.score(split)
        for ri, r in enumerate(RELATIONS):
            assert res.edges[split][ri] == count[split][r]
            if count[split][r]:
                want = expected[split][r] / count[split][r]
                assert np.array_equal(score[ri], np.broadcast_to(want[:, :, None, None], score[ri].shape)), r
            else:
                assert np.isnan(score[ri]).all()


def naive_ranks_hit(row: np.ndarray, own: int, target: int, k: int) -> bool:
    row = row.copy()
    row[own] = 0
    order = sorted(range(len(row)), key=lambda j: (-row[j], j))
    return target in order[:k]


def naive_scores(samples_splits, attns, relations, ks, causal):
    hits = {sp: np.zeros((len(relations), 3, len(ks), L, H), np.int64) for sp in ("val", "test")}
    for (sample, split), wa in zip(samples_splits, attns, strict=True):
        for ri, r in enumerate(relations):
            for h, s, e in sample.relns.get(r, ()):
                for ki, k in enumerate(ks):
                    for layer in range(L):
                        for head in range(H):
                            a = wa[layer, head]
                            if causal:
                                got = (naive_ranks_hit(a[s], s, h, k), naive_ranks_hit(a[e], e, h, k),
                                       any(naive_ranks_hit(a[x], x, h, k) for x in range(s, e + 1)))
                            else:
                                got = (naive_ranks_hit(a[h], h, s, k), naive_ranks_hit(a[h], h, e, k),
                                       any(naive_ranks_hit(a[h], h, x, k) for x in range(s, e + 1)))
                            hits[split][ri, :, ki, layer, head] += got
    return hits


@pytest.mark.parametrize("causal", [False, True])
def test_vectorized_matches_naive_loop(samples, causal, monkeypatch):
    import probes.codesyntax.heads as heads

    rng = np.random.default_rng(7)
    relations = RELATIONS
    ks = (1, 2, 4, 7)
    samples_splits = [(s, ("val", "test")[i % 2]) for i, s in enumerate(samples)]
    # few distinct values -> many ties; a nonzero diagonal must be ignored
    attns = [rng.integers(0, 3, size=(L, H, len(s.tokens), len(s.tokens))).astype(np.float32) for s, _ in samples_splits]
    want = naive_scores(samples_splits, attns, relations, ks, causal)
    for sort_from in (0, 8, 10**6):  # all rows sorted, mixed, all counted
        monkeypatch.setattr(heads, "_SORT_FROM", sort_from)
        monkeypatch.setattr(heads, "_CHUNK", 5000)  # several chunks
        scorer = HeadScorer(relations=relations, ks=ks, causal=causal)
        for (sample, split), wa in zip(samples_splits, attns, strict=True):
            scorer.add(sample, wa, split)
        res = scorer.result()
        for split in ("val", "test"):
            np.testing.assert_array_equal(res.hits[split], want[split])
        assert res.n_samples == {"val": 3, "test": 2}


def test_min_edges_nan_and_layer_head(samples):
    rng = np.random.default_rng(2)
    scorer = HeadScorer(ks=(1, 5))
    for i, sample in enumerate(samples):
        n = len(sample.tokens)
        scorer.add(sample, rng.random((L, H, n, n)), ("val", "test")[i % 2])
    res = scorer.result()
    ev, et = res.edges["val"], res.edges["test"]
    for min_edges in (1, 3, 10):
        best = res.best_heads(min_edges=min_edges)
        keep = [r for i, r in enumerate(RELATIONS) if ev[i] >= min_edges and et[i] >= min_edges]
        assert list(best.relation) == keep
        assert res.model_score(min_edges=min_edges) == pytest.approx(best.test_score.mean())
    assert np.isnan(res.model_score(min_edges=10**6))
    # best head: the val argmax, its test score read at the same head
    best = res.best_heads(metric="any", k=5)
    for row in best.itertuples():
        val = res.layer_head(row.relation, "any", 5, "val")
        assert val[row.layer, row.head] == val.max() == row.val_score
        assert res.layer_head(row.relation, "any", 5)[row.layer, row.head] == row.test_score
    missing = [r for i, r in enumerate(RELATIONS) if et[i] == 0]
    assert missing and np.isnan(res.layer_head(missing[0])).all()
    with pytest.raises(ValueError):
        res.best_heads(k=2)  # not scored
    with pytest.raises(ValueError):
        res.layer_head(RELATIONS[0], metric="middle")


def test_best_head_ties_lowest_layer_then_head():
    sample = fake(["a", "b", "c"], [(0, 1, 1)])
    wa = np.zeros((2, 3, 3, 3))
    wa[1, 0, 0, 1] = wa[1, 2, 0, 1] = wa[0, 2, 0, 1] = 1.0  # heads (0,2), (1,0), (1,2) all hit
    scorer = HeadScorer(relations=("R",), ks=(1,))
    scorer.add(sample, wa, "val")
    scorer.add(sample, wa, "test")
    best = scorer.result().best_heads()
    assert (best.layer[0], best["head"][0]) == (0, 2)


def test_scorer_rejects_bad_input(samples):
    scorer = HeadScorer()
    n = len(samples[0].tokens)
    with pytest.raises(ValueError):
        scorer.result()
    with pytest.raises(ValueError):
        scorer.add(samples[0], np.zeros((L, H, n, n)), "train")
    with pytest.raises(ValueError):
        scorer.add(samples[0], np.zeros((L, H, n + 1, n + 1)), "val")
    scorer.add(samples[0], np.zeros((L, H, n, n)), "val")
    with pytest.raises(ValueError):
        scorer.add(samples[0], np.zeros((L + 1, H, n, n)), "val")
    with pytest.raises(ValueError):
        HeadScorer(ks=(0, 1))
    with pytest.raises(ValueError):
        HeadScorer(relations=("R",)).add(fake(["a", "b"], [(1, 0, 0)]), np.zeros((1, 1, 2, 2)), "val")


# ---------------------------------------------------------------- baselines


def baseline_case() -> list[tuple[Sample, str]]:
    return [
        # val: +1 hits the two edges of the first sample, keyword `in` those of the second
        (fake(["a", "b", "c", "d", "e"], [(0, 1, 1), (2, 3, 3)]), "val"),
        (fake(["a", "x", "y", "in", "b"], [(0, 3, 3), (1, 3, 3)]), "val"),
        # test: offsets +1, +2, +2, +3; `in` hits only (0, 2, 2)
        (fake(["a", "b", "in", "c"], [(0, 1, 1), (0, 2, 2), (1, 3, 3), (0, 3, 3)]), "test"),
    ]


def test_baselines_greedy_exact():
    df = baseline_scores(baseline_case(), relations=("R",), ks=(1, 2, 3))
    assert set(df.columns) >= {"relation", "metric", "k", "offset", "keyword", "combined", "n_val", "n_test"}
    assert len(df) == 3 * 3 and (df.n_val == 4).all() and (df.n_test == 4).all()
    first = df[df.metric == "first"].set_index("k")
    # the joint greedy: +1 and `in` cover 2 val edges each; offsets win the tie, then `in`
    assert first.joint_picks[1] == "+1" and first.joint_picks[2] == "+1 in"
    assert first.joint[1] == 0.25 and first.joint[2] == 0.5
    # offsets alone: +1, then +2 (tie with +3, smaller first), then +3
    assert first.offset_picks[3] == "+1 +2 +3"
    assert list(first.offset) == [0.25, 0.75, 1.0]
    # keywords alone: `in`, then no val gain: the first keyword alphabetically
    assert first.keyword_picks[2] == f"in {KEYWORDS[0]}" and KEYWORDS[0] == "False"
    assert list(first.keyword) == [0.25, 0.25, 0.25]
    assert list(first.combined) == [0.25, 0.75, 1.0]
    assert (df.combined == np.fmax(df.offset, df.keyword)).all()
    # one-word dependents: the three metrics agree
    for m in METRICS:
        sub = df[df.metric == m].set_index("k")
        assert list(sub.offset) == list(first.offset) and list(sub.keyword) == list(first.keyword)


def test_baselines_spans_and_causal_keywords():
    samples = [
        (fake(["for", "x", "in", "y", "z", "w"], [(0, 3, 5), (0, 1, 4)]), "val"),
        (fake(["for", "x", "in", "y", "z", "w"], [(0, 3, 5), (0, 1, 4)]), "test"),
    ]
    enc = baseline_scores(samples, relations=("R",), ks=(1,)).set_index("metric")
    # encoder: the next `in` after `for` is word 2: inside 1..4 only, so it hits under `any` alone
    assert enc.keyword["first"] == 0.0 and enc.keyword["last"] == 0.0 and enc.keyword["any"] == 0.5
    assert enc.keyword_picks["first"] == "False" and enc.keyword_picks["any"] == "in"
    # offsets: first +3 | +1 (tie: +1), last +5 | +4 (+4), any: +3 and +4 are inside both spans (+3)
    assert enc.offset["first"] == 0.5 and enc.offset["last"] == 0.5 and enc.offset["any"] == 1.0
    assert list(enc.offset_picks) == ["+1", "+4", "+3"]
    cau = baseline_scores(samples, relations=("R",), ks=(1,), causal=True).set_index("metric")
    # causal: the previous `for` before the dependent row is word 0 for every row
    assert cau.keyword["first"] == cau.keyword["last"] == cau.keyword["any"] == 1.0
    assert cau.keyword_picks["first"] == "for"
    assert cau.offset["any"] == enc.offset["any"] and cau.offset["first"] == enc.offset["first"]
    # a second `for` between the dependent's first and last word: `last` looks back from word 4 and finds word 3
    two = [(fake(["for", "x", "in", "for", "y"], [(0, 1, 4)]), sp) for sp in ("val", "test")]
    cau = baseline_scores(two, relations=("R",), ks=(1,), causal=True).set_index("metric")
    assert cau.keyword["first"] == cau.keyword["any"] == 1.0 and cau.keyword["last"] == 0.0
    assert cau.keyword_picks["first"] == "for" and cau.keyword_picks["last"] == "False"


def test_baselines_no_edges_nan():
    df = baseline_scores([(fake(["a", "b"], [(0, 1, 1)]), "val")], relations=("R", "S"), ks=(1, 2))
    assert df[["offset", "keyword", "combined", "joint"]].isna().all().all()
    assert list(df[df.relation == "S"].n_val.unique()) == [0]
    with pytest.raises(ValueError):
        baseline_scores([(fake(["a", "b"], [(0, 1, 1)]), "train")], relations=("R",))


def test_baselines_on_real_samples(samples):
    pairs = [(s, ("val", "test")[i % 2]) for i, s in enumerate(samples)]
    df = baseline_scores(pairs, ks=(1, 3, 20))
    assert len(df) == len(RELATIONS) * 3 * 3
    ok = df.dropna(subset=["offset"])
    assert ((ok.offset >= 0) & (ok.offset <= 1)).all()
    # more predictors never lower a greedy set's test score
    for _, g in ok.groupby(["relation", "metric"]):
        assert g.sort_values("k").offset.is_monotonic_increasing
        assert g.sort_values("k").joint.is_monotonic_increasing


# ---------------------------------------------------------------- splits


def test_split_samples():
    a = split_samples(10, seed=3)
    assert list(a) == list(split_samples(10, seed=3)) and (a == "val").sum() == 5 and set(a) == {"val", "test"}
    assert (split_samples(10, 0.3) == "val").sum() == 3
    assert (split_samples(0) == "val").sum() == 0
    assert any(list(split_samples(10, seed=s)) != list(a) for s in range(5))
    with pytest.raises(ValueError):
        split_samples(4, val_fraction=1.5)
