"""ui/widgets.py: the shipped examples, the default settings and the model picker."""

import pytest

from asc.paths import EXAMPLES_DIR
from ui import widgets


def test_examples_are_the_shipped_python_and_java_files_in_name_order():
    ex = widgets.examples()
    expected = sorted(p.name for p in EXAMPLES_DIR.iterdir() if p.suffix in (".py", ".java"))
    assert list(ex) == expected
    assert {"count_chars.py", "syntax_error.py", "Main.java"} <= set(ex)
    for name, text in ex.items():
        assert text == (EXAMPLES_DIR / name).read_text(encoding="utf-8") and text.strip()
    assert ex["count_chars.py"].startswith("def count_chars(")


def test_default_settings_follow_asc_model(monkeypatch):
    monkeypatch.setenv("ASC_MODEL", "tiny-random")
    assert widgets.default_settings() == widgets.Settings("tiny-random", False, "python", "median")
    monkeypatch.delenv("ASC_MODEL")
    assert widgets.default_settings().model == "smollm2-135m"


class _Where:
    """A stand-in for ``st`` or a column: answers the picker's two widgets with fixed values."""

    def __init__(self, ticked, other):
        self.ticked, self.other, self.calls = ticked, other, []

    def multiselect(self, label, options, default, key, **kwargs):
        self.calls.append(("multiselect", key, tuple(default)))
        return list(self.ticked)

    def text_input(self, label, key):
        self.calls.append(("text_input", key))
        return self.other


@pytest.mark.parametrize("ticked, other, expected", [
    (["a", "b"], "", ["a", "b"]),
    (["a"], " org/x , ,/tmp/m ", ["a", "org/x", "/tmp/m"]),
    (["a", "b"], "b, a, c", ["a", "b", "c"]),  # repeats dropped, first occurrence kept
    ([], "", []),
])
def test_model_picker_returns_the_chosen_specs_in_order_without_repeats(ticked, other, expected):
    where = _Where(ticked, other)
    assert widgets.model_picker(where, "Models", ["a", "b"], ["b", "gone"], "xx") == expected
    # defaults that are not options are left out; widget keys carry the prefix
    assert where.calls == [("multiselect", "xx_models", ("b",)), ("text_input", "xx_other")]


def test_device_choices_start_with_auto_and_cpu(monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert widgets.device_choices()[:2] == ["auto", "cpu"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert {"cuda:0", "cuda:1"} <= set(widgets.device_choices())
    assert (widgets.default_settings().device, widgets.default_settings().dtype) == ("auto", "auto")
