"""asc.why.choices: every corruption the inspector offers applies to the snippet, and nothing after the target is
offered."""

from __future__ import annotations

import pytest

from asc.syntax import parse
from asc.why.choices import corruption_choices
from asc.why.corrupt import corrupt

SRC = '''def scale(values, factor=2):
    """Multiply every value."""
    # the loop
    out = []
    for v in values:
        out.append(v * factor + 1)
    return out
'''


def test_every_offered_corruption_applies_and_changes_the_code():
    offered = corruption_choices(SRC)
    specs = [c.spec for c in offered]
    assert {"rename:values", "rename:factor", "rename:out", "docstring", "comment"} <= set(specs)
    assert any(s.startswith("operator:6:") for s in specs) and any(s.startswith("literal:1:") for s in specs)
    assert len(specs) == len(set(specs))
    for c in offered:
        result = corrupt(SRC, c.spec)
        assert result.corrupted != SRC, c.spec
        assert not parse(result.corrupted).has_error, c.spec
    star = next(c for c in offered if c.spec.startswith("operator:6:"))
    assert "*" in star.label and "6:" in star.label
    assert next(c.label for c in offered if c.spec == "rename:values") == "rename values (2 occurrences)"


def test_nothing_at_or_after_the_target_is_offered():
    before = SRC.index("out = []")
    specs = [c.spec for c in corruption_choices(SRC, before=before)]
    assert "rename:out" not in specs and "rename:v" not in specs  # first seen after the target
    assert not any(s.startswith(("operator:", "literal:6")) for s in specs)
    assert {"rename:values", "docstring", "comment"} <= set(specs)
    labels = {c.spec: c.label for c in corruption_choices(SRC, before=before)}
    assert labels["rename:values"] == "rename values (2 occurrences)"  # the rename renames the later one too
    assert corruption_choices("x\n", before=0) == []


@pytest.mark.parametrize("language, src", [("java", "class A { int f(int a) { return a + 1; } }\n")])
def test_java_snippets_offer_their_corruptions(language, src):
    specs = [c.spec for c in corruption_choices(src, language)]
    assert "rename:a" in specs and any(s.startswith("operator:") for s in specs)
    for spec in specs:
        assert corrupt(src, spec, language).corrupted != src
