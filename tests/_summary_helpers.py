"""Checks shared by the tests of the result summaries (``relucore._summary``)."""

import numpy as np

from relucore._summary import MAX_LINES, WIDTH


def assert_summary(obj, *, contains=()):
    """repr and str of ``obj`` are its short summary: few, bounded lines, no array dumps, and every phrase of ``contains``."""
    text = repr(obj)
    assert str(obj) == text or type(obj).__str__ is not object.__str__
    lines = text.splitlines()
    assert lines[0].startswith(type(obj).__name__ + ":"), lines[0]
    assert 1 < len(lines) <= MAX_LINES, text
    assert all(len(line) <= WIDTH for line in lines), text
    for phrase in contains:
        assert phrase in text, (phrase, text)
    for name, value in obj.to_dict().items():
        if isinstance(value, np.ndarray):
            assert value is getattr(obj, name)
    return text
