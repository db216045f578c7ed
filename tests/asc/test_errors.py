"""asc.errors: every deliberate error is an AscError (one line for the CLI and pages) and also the builtin type
callers already catch."""

import pytest

from asc.errors import AscError, CorpusError, InputError, ModelLoadError, UnknownModelError


@pytest.mark.parametrize("cls, builtin", [(UnknownModelError, KeyError), (InputError, ValueError),
                                          (CorpusError, ValueError), (ModelLoadError, Exception)])
def test_each_error_is_an_asc_error_and_its_builtin(cls, builtin):
    err = cls("what to do")
    assert isinstance(err, AscError) and isinstance(err, builtin)
    with pytest.raises(AscError, match="^what to do$"):
        raise err


def test_unknown_model_message_is_not_quoted_like_a_key_error():
    assert str(UnknownModelError("unknown model 'x': give an embedded name")) == "unknown model 'x': give an embedded name"
    assert str(KeyError("plain")) == "'plain'"  # what KeyError alone would print
    assert str(UnknownModelError()) == ""
