"""probes.gluecode.browse: answers put back in place, candidate shares, confusion, mistakes, the context table."""

import math

import pandas as pd
import pytest

from asc.errors import InputError
from probes.gluecode import browse
from probes.gluecode.browse import answered, candidate_table, confusion, context_frame, mistakes
from probes.gluecode.items import MASK, NO_WARNING, NPATH_BUCKETS, OPERATORS, Item
from probes.gluecode.nulltoken import NULL_PROMPT
from probes.gluecode.zeroshot import Prediction


def item(task, function, label, **kw):
    return Item(task=task, id=f"{task}/x", split="test", module="m", function=function, label=label, **kw)


def pred(task, label, prediction, **kw):
    return Prediction(item_id=kw.pop("item_id", "x"), task=task, mode=kw.pop("mode", "rank"),
                      context=kw.pop("context", "function"), model=kw.pop("model", "m"), label=label,
                      prediction=prediction, correct=label == prediction, score=float(label == prediction), **kw)


def test_answers_go_back_where_the_mask_was():
    fn = f"def {MASK}(n):\n    return {MASK}(n - 1) if n else 0\n"
    a = answered(item("NAME", fn, "countdown"))
    assert a.text == "def countdown(n):\n    return countdown(n - 1) if n else 0\n"
    assert [a.text[s:e] for s, e in a.spans] == ["countdown", "countdown"] and a.spans[0] == (4, 13)
    ops = answered(item("OPS", f"def f(a, b):\n    return a {MASK} b\n", "<="))
    assert ops.text == "def f(a, b):\n    return a <= b\n" and ops.spans == ((26, 28),)


def test_npath_spans_the_function_and_null_the_flagged_token():
    fn = "def f(x):\n    if x:\n        return 1\n    return 2\n"
    assert answered(item("NPATH", fn, "2")).spans == ((0, len(fn.rstrip())),)
    src = "def g(s):\n    m = re.match('a', s)\n    return m.group(0)\n"
    start = src.index("m.group")
    null = item("NULL", f"{src}{NULL_PROMPT}{MASK}\n", "m", meta={"start": start, "end": start + 1})
    a = answered(null)
    assert a.text == src and a.spans == ((start, start + 1),)
    assert answered(item("NULL", f"{src}{NULL_PROMPT}{MASK}\n", NO_WARNING)).spans == ()
    wrong = item("NULL", f"{src}{NULL_PROMPT}{MASK}\n", "m", meta={"start": 0, "end": 1})
    with pytest.raises(InputError, match="rebuild the task set"):
        answered(wrong)


def test_candidate_shares_are_a_softmax_best_first():
    table = candidate_table(["+", "-", "*"], [-1.0, -3.0, -1.0 - math.log(3)], label="-", prediction="+")
    assert list(table["candidate"]) == ["+", "*", "-"]
    assert table["share"].sum() == pytest.approx(1.0)
    assert table["share"].iloc[0] == pytest.approx(3 * table["share"].iloc[1])  # e^{log 3} apart
    assert table["is_label"].tolist() == [False, False, True] and table["is_prediction"].tolist() == [True, False, False]
    with pytest.raises(InputError):
        candidate_table(["a"], [1.0, 2.0], "a", "a")


def test_confusion_counts_every_pair_and_keeps_empty_classes():
    preds = [pred("OPS", "+", "+"), pred("OPS", "+", "-"), pred("OPS", "<", "<", parses_prediction="<"),
             pred("OPS", "<", "=", parses_prediction="<="), pred("NPATH", "1", "2")]
    table = confusion(preds, "OPS")
    assert list(table.index) == list(OPERATORS) and list(table.columns) == list(OPERATORS)
    assert table.loc["+", "+"] == 1 and table.loc["+", "-"] == 1 and table.loc["<", "="] == 1
    assert table.to_numpy().sum() == 4  # the NPATH prediction is not counted
    parses = confusion(preds, "OPS", parses=True)
    assert parses.loc["<", "<="] == 1 and parses.loc["<", "="] == 0
    assert list(confusion(preds, "NPATH").index) == list(NPATH_BUCKETS)
    with pytest.raises(InputError, match="NPATH, OPS, NULL"):
        confusion(preds, "NAME")


def test_null_confusion_reads_warning_and_token():
    preds = [pred("NULL", "m", "m"), pred("NULL", "m", "s"), pred("NULL", "m", NO_WARNING),
             pred("NULL", NO_WARNING, NO_WARNING), pred("NULL", NO_WARNING, "x")]
    table = confusion(preds, "NULL")
    assert table.loc["a token"].tolist() == [1, 1, 1]  # flagged token, another token, no warning
    assert table.loc[NO_WARNING].tolist() == [0, 1, 1]


def test_mistakes_are_the_most_frequent_wrong_pairs():
    preds = [pred("CALL", "len", "str")] * 3 + [pred("CALL", "open", "print")] + [pred("CALL", "len", "len")] * 5
    table = mistakes(preds, k=5)
    assert table.to_dict("records") == [{"label": "len", "prediction": "str", "count": 3},
                                        {"label": "open", "prediction": "print", "count": 1}]


def test_context_frame_takes_each_tasks_main_metric_and_its_baseline():
    acc = pd.DataFrame([
        {"model": "m", "task": "NAME", "mode": "generate", "context": "file", "metric": "char-BLEU", "n": 4,
         "value": 0.5, "ci_low": 0.4, "ci_high": 0.6},
        {"model": "m", "task": "NAME", "mode": "generate", "context": "function", "metric": "exact match", "n": 4,
         "value": 0.25, "ci_low": 0.0, "ci_high": 0.5},
        {"model": "m", "task": "NAME", "mode": "generate", "context": "function", "metric": "char-BLEU", "n": 4,
         "value": 0.3, "ci_low": 0.2, "ci_high": 0.4},
        {"model": "m", "task": "NAME", "mode": "rank", "context": "function", "metric": "accuracy", "n": 4,
         "value": 0.9, "ci_low": 0.8, "ci_high": 1.0},
        {"model": "m", "task": "OPS", "mode": "rank", "context": "function", "metric": "accuracy", "n": 4,
         "value": 0.7, "ci_low": 0.5, "ci_high": 0.9}])
    base = pd.DataFrame([{"task": "OPS", "baseline": "b", "prediction": "+", "metric": "accuracy", "n": 4,
                          "value": 0.1, "ci_low": 0.0, "ci_high": 0.2}])
    frame = context_frame(acc, base)
    assert frame[["task", "context", "value"]].values.tolist() == [["OPS", "function", 0.7], ["NAME", "function", 0.3],
                                                                    ["NAME", "file", 0.5]]
    assert frame["baseline"].iloc[0] == 0.1 and math.isnan(frame["baseline"].iloc[1])


def test_every_tasks_main_metric_is_one_the_accuracy_table_writes():
    """The one task -> metric map (browse.MAIN_METRIC) names metrics accuracy_table really writes: a task whose
    entry named another metric (runs.TASK_METRIC said "exact match" for CALL and NULL) would vanish from the table."""
    from probes.gluecode.browse import MAIN_METRIC
    from probes.gluecode.items import TASKS
    from probes.gluecode.zeroshot import accuracy_table

    preds = [pred(task, "a", "a", mode="generate" if task in ("NAME", "CALL") else "rank") for task in TASKS]
    frame = context_frame(accuracy_table(preds))
    assert set(MAIN_METRIC) == set(TASKS)
    assert sorted(frame["task"]) == sorted(TASKS)


# ------------------------------------------------------------------------------------------ what the pickers offer

ANSWERS = [
    pred("OPS", "+", "+", item_id="a", context="file"),
    pred("OPS", "+", "-", item_id="b", context="function"),
    pred("OPS", "+", "", item_id="c", context="function", skipped="too long"),
    pred("OPS", "-", "-", item_id="a", context="function", model="other"),
    pred("NAME", "size", "size", item_id="a", context="function", mode="rank"),
    pred("NAME", "size", "len", item_id="a", context="function", mode="generate"),
]


def test_levels_answered_are_in_context_order_for_that_model_and_task():
    assert browse.levels_answered(ANSWERS, "m", "OPS") == ["function", "file"]  # CONTEXTS order, not the answers'
    assert browse.levels_answered(ANSWERS, "other", "OPS") == ["function"]
    assert browse.levels_answered(ANSWERS, "m", "CALL") == []


def test_scored_answers_leave_out_skipped_items_and_names_ranked_rather_than_generated():
    assert [p.item_id for p in browse.scored_answers(ANSWERS, "m", "OPS", "function")] == ["b"]
    assert [(p.prediction, p.mode) for p in browse.scored_answers(ANSWERS, "m", "NAME", "function")] == [("len", "generate")]


@pytest.mark.parametrize(("which", "expected"), [("all", ["b", "c"]), ("wrong", ["b", "c"]), ("right", [])])
def test_item_answers_filter_by_items_and_by_right_or_wrong(which, expected):
    assert [p.item_id for p in browse.item_answers(ANSWERS, "m", "OPS", "function", ["b", "c"], which)] == expected
    assert [p.item_id for p in browse.item_answers(ANSWERS, "m", "OPS", "function", ["b"], which)] == expected[:1]


def test_item_answers_refuse_an_unknown_filter():
    with pytest.raises(InputError, match="all, wrong, right"):
        browse.item_answers(ANSWERS, "m", "OPS", "function", ["b"], "maybe")
