"""ui/branches_view.py without a model: how tokens read in its labels (the default branch point is the backend's:
tests/asc/branching/test_requests.py)."""

from ui import branches_view


def test_token_labels_draw_whitespace():
    assert branches_view._shown("\n        ") == "'⏎········'"
    assert branches_view._shown("\n    ") != branches_view._shown("\n        ")
    assert branches_view._shown(" for") == "'·for'" and branches_view._shown("\t") == "'→'"
