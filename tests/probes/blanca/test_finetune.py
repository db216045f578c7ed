"""Fine-tuning on BLANCA items (probes.blanca.finetune): the score mapping of each task's training pairs, the paper's
model names, the checks made before training, and a small real fine-tune of the embedded MiniLM (multi-task L + H)
that must pull positives together, load back, record its provenance, resume, refuse other inputs and stop cleanly."""

from __future__ import annotations

import json

import numpy as np
import pytest

from asc.errors import InputError
from probes.blanca.finetune import (
    FINETUNE_MANIFEST,
    base_folder,
    default_finetune_name,
    finetune,
    training_pairs,
)
from probes.blanca.items import PairItem, RankItem, ScoredPairItem

TOPICS = [
    ("How do I read a text file line by line in Python?", "Open the file and iterate over it: for line in f."),
    ("How can I sort a list of dictionaries by a key?", "Use sorted(rows, key=lambda r: r['age']) on the list."),
    ("How do I merge two dictionaries?", "Write {**a, **b} or a | b to combine both mappings into one dict."),
    ("How to get the current date and time?", "Call datetime.now() from the datetime module for a timestamp."),
    ("How do I make an HTTP request?", "urllib.request.urlopen(url) fetches a web page over HTTP."),
    ("How can I run a shell command from Python?", "subprocess.run(['ls', '-l']) executes an external program."),
    ("How to parse a JSON string?", "json.loads(text) turns a JSON document into Python objects."),
    ("How do I remove duplicates from a list?", "Convert to a set, or dict.fromkeys(items) to keep the order."),
    ("How to reverse a string?", "Slice it with a negative step: s[::-1] gives the characters backwards."),
    ("How to count word frequencies?", "collections.Counter(words).most_common() counts each word."),
    ("How do I check whether a file exists?", "pathlib.Path(name).exists() tells whether the path is there."),
    ("How can I generate random numbers?", "random.randint(1, 6) draws an integer, random.random() a float."),
]
CLASSES = [("OrderedDict", "Dictionary that remembers insertion order."),
           ("dict", "A mapping object maps hashable values to arbitrary objects."),
           ("defaultdict", "A dict subclass that calls a factory function to supply missing values."),
           ("Counter", "Dict subclass for counting hashable objects."),
           ("deque", "A list-like sequence optimized for data accesses near its endpoints."),
           ("Thread", "A class that represents a thread of control running in a separate process flow."),
           ("Socket", "A network endpoint for sending and receiving bytes over a connection."),
           ("Decimal", "Floating point decimal arithmetic with exact rounding control.")]


def linked(n: int = 12, split: str = "train") -> list[PairItem]:
    """``n`` positive pairs (a question and its answer) and ``n`` negatives (an answer to another question)."""
    pos = [PairItem("L", f"p{i}", split, q, a, True) for i, (q, a) in enumerate(TOPICS[:n])]
    neg = [PairItem("L", f"n{i}", split, TOPICS[i][0], TOPICS[(i + 5) % n][1], False) for i in range(n)]
    return pos + neg


def hierarchy(n: int = 24) -> list[ScoredPairItem]:
    pairs = [(a, b) for a in range(len(CLASSES)) for b in range(a + 1, len(CLASSES))][:n]
    return [ScoredPairItem("H", f"h{k}", "train", CLASSES[a][1], CLASSES[b][1], float(1 + (a + b) % 4),
                           CLASSES[a][0], CLASSES[b][0]) for k, (a, b) in enumerate(pairs)]


def test_rank_grades_become_scores_within_each_question():
    items = [RankItem("q1", "train", "Q1", ("a", "b", "c"), (10.0, 0.0, 5.0)),
             RankItem("q2", "train", "Q2", ("d", "e"), (3.0, 1.0)),
             RankItem("q3", "train", "Q3", ("f", "g"), (2.0, 2.0)),  # no order: left out
             RankItem("q4", "test", "Q4", ("h", "i"), (1.0, 0.0))]
    assert training_pairs("R", items) == [("Q1", "a", 1.0), ("Q1", "b", 0.0), ("Q1", "c", 0.5),
                                          ("Q2", "d", 1.0), ("Q2", "e", 0.0)]


def test_hierarchy_distance_maps_to_relatedness_and_usage_similarity_is_kept():
    items = [ScoredPairItem("H", f"h{d}", "train", f"a{d}", f"b{d}", float(d), "A", "B") for d in (1, 2, 5)]
    assert [p[2] for p in training_pairs("H", items)] == [1.0, 0.75, 0.0]
    usage = [ScoredPairItem("U", f"u{i}", "train", "a", "b", v, "A", "B") for i, v in enumerate((0.2, 0.9, 1.3))]
    assert [p[2] for p in training_pairs("U", usage)] == [0.2, 0.9, 1.0]  # clipped to [0, 1]
    assert [p[2] for p in training_pairs("U", usage, target="distance")] == pytest.approx([1.0, 4 / 11, 0.0])
    with pytest.raises(InputError, match="distance or similarity"):
        training_pairs("H", items, target="rank")


def test_pairs_are_labelled_test_items_left_out_and_subsamples_keep_the_class_share():
    items = linked(12) + linked(12, "test")[:3]
    pairs = training_pairs("L", items)
    assert len(pairs) == 24 and sum(p[2] for p in pairs) == 12 and set(p[2] for p in pairs) == {0.0, 1.0}
    skewed = linked(12)[:12] + linked(12)[12:][:4]  # 12 positives, 4 negatives
    skewed = [PairItem("L", f"{i.id}-{k}", "train", i.text_a, i.text_b, i.positive) for k, i in enumerate(skewed)]
    sample = training_pairs("L", skewed, max_pairs=8, seed=3)
    assert len(sample) == 8 and sum(p[2] for p in sample) == 6  # 3:1 kept
    assert sample == training_pairs("L", skewed, max_pairs=8, seed=3) != training_pairs("L", skewed, max_pairs=8)


def test_no_train_items_wrong_items_and_bad_settings_raise():
    with pytest.raises(InputError, match="no items with split 'train'"):
        training_pairs("L", linked(4, "test"))
    with pytest.raises(InputError, match="not H items"):
        training_pairs("H", linked(4))
    with pytest.raises(InputError, match="choose one or more"):
        training_pairs("X", linked(4))
    with pytest.raises(InputError, match="max_pairs"):
        training_pairs("L", linked(4), max_pairs=0)


def test_default_names_follow_the_paper():
    assert default_finetune_name(["R"]) == "FT-R"
    assert default_finetune_name(["U", "H"]) == "HU"
    assert default_finetune_name({"U": 1, "L": 1, "R": 1, "F": 1, "H": 1}) == "RFLHU"
    with pytest.raises(InputError):
        default_finetune_name([])


def test_base_folder_accepts_encoders_and_names_the_fix(tmp_path):
    assert (base_folder("minilm-l6") / "modules.json").is_file()
    with pytest.raises(InputError, match="no modules.json"):
        base_folder(tmp_path)
    with pytest.raises(InputError, match="decoder"):
        base_folder("smollm2-135m")
    with pytest.raises(InputError, match="no folder"):
        base_folder(tmp_path / "absent")


def test_an_occupied_out_folder_is_refused_before_training(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "notes.txt").write_text("mine")
    with pytest.raises(InputError, match="not a BLANCA fine-tune"):
        finetune("minilm-l6", {"L": linked(4)}, tmp_path / "out")


def _eval_losses(model, pairs) -> tuple[float, float, float]:
    """On ``pairs`` in eval mode: SBERT's contrastive loss (cosine distance, margin 0.5), the cosine-similarity MSE
    against the labels, and the mean cosine distance of the pairs labelled 1."""
    a = model.encode([p[0] for p in pairs], normalize_embeddings=True)
    b = model.encode([p[1] for p in pairs], normalize_embeddings=True)
    labels = np.array([p[2] for p in pairs])
    dist = 1.0 - (a * b).sum(axis=1)
    contrastive = 0.5 * (labels * dist**2 + (1 - labels) * np.maximum(0.0, 0.5 - dist) ** 2)
    return float(contrastive.mean()), float(((1 - dist - labels) ** 2).mean()), float(dist[labels == 1.0].mean())


@pytest.mark.real
@pytest.mark.slow
def test_finetune_minilm_multitask_saves_loads_resumes_and_stops(tmp_path):
    import torch
    from sentence_transformers import SentenceTransformer

    from asc.models import load_model

    torch.set_num_threads(1)
    items = {"H": hierarchy(24), "L": linked(12)}
    out = tmp_path / "HL"
    seen: list[tuple[int, int]] = []
    settings = dict(epochs=2, batch_size=8, max_seq_length=64, learning_rate=1e-4)
    result = finetune("minilm-l6", items, out, on_progress=lambda s, t: seen.append((s, t)), **settings)

    assert result.tasks == ("L", "H") and result.pairs == {"L": 24, "H": 24} and not result.reused
    assert result.steps == 12 and seen[-1] == (12, 12) and len(seen) == 12
    prov = json.loads((out / FINETUNE_MANIFEST).read_text())
    assert prov["name"] == "LH" and prov["loss_names"] == {"L": "ContrastiveLoss", "H": "CosineSimilarityLoss"}
    assert len(prov["base"]["sha256"]) == 64 and len(prov["items_digest"]) == 64
    assert prov["hyperparameters"]["epochs"] == 2 and prov["versions"]["sentence_transformers"]
    assert prov["epoch_losses"]["L"][1] < prov["epoch_losses"]["L"][0]  # the contrastive loss goes down
    assert (out / "config.json").is_file() and not list(tmp_path.glob(".*"))  # no temporary folder left

    base, tuned = (SentenceTransformer(str(f), device="cpu") for f in (base_folder("minilm-l6"), out))
    links, classes = training_pairs("L", items["L"]), training_pairs("H", items["H"])
    (l_before, _, pos_before), (l_after, _, pos_after) = _eval_losses(base, links), _eval_losses(tuned, links)
    h_before, h_after = _eval_losses(base, classes)[1], _eval_losses(tuned, classes)[1]
    # measured: L 0.056 -> 0.006, linked posts' distance 0.46 -> 0.13, H's MSE 0.22 -> 0.10
    assert l_after < l_before / 2 and pos_after < pos_before - 0.1 and h_after < h_before * 0.8
    bundle = load_model(str(out))
    assert bundle.causal is False

    mtime = (out / "model.safetensors").stat().st_mtime_ns
    again = finetune("minilm-l6", items, out, **settings)
    assert again.reused and again.seconds == result.seconds and again.losses == result.losses
    assert (out / "model.safetensors").stat().st_mtime_ns == mtime
    with pytest.raises(InputError, match="other inputs"):
        finetune("minilm-l6", {"L": linked(12)}, out, **settings)

    stopped = tmp_path / "stopped"
    calls = iter(range(100))
    with pytest.raises(InterruptedError):
        finetune("minilm-l6", {"L": linked(12)}, stopped, batch_size=8, should_stop=lambda: next(calls) >= 2)
    assert not stopped.exists() and not list(tmp_path.glob(".*"))


@pytest.mark.real
@pytest.mark.slow
def test_two_runs_with_the_same_seed_give_the_same_weights(tmp_path):
    import torch

    torch.set_num_threads(1)
    runs = [finetune("minilm-l6", {"L": linked(12)}, tmp_path / name, max_pairs=8, batch_size=4, max_seq_length=32)
            for name in ("a", "b")]
    assert runs[0].losses == runs[1].losses
    assert (tmp_path / "a" / "model.safetensors").read_bytes() == (tmp_path / "b" / "model.safetensors").read_bytes()
