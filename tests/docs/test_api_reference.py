"""The API reference's completeness check (``docs/_ext/apicheck.py``) passes, and can fail.

The documentation build runs the same check and turns each problem into a warning (an
error under ``-W``). It parses the docstrings with ``numpydoc.docscrape``, so it needs
the docs extra (``pip install ".[docs]"``); without numpydoc the tests are skipped and the
docs build (``.ci/docs.sh``) still enforces it.
"""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

import apicheck  # noqa: E402

pytest.importorskip("numpydoc")


def test_every_public_name_is_documented():
    problems = apicheck.docstring_problems()
    assert problems == [], "\n".join(problems)


def test_public_objects_cover_every_namespace():
    names = [name for name, _ in apicheck.public_objects()]
    for module in apicheck.API_PAGES:
        assert any(n.startswith(module + ".") for n in names), module
    assert "relucore.train" in names and "relucore.Trainer" in names


def _undocumented(a, b=1, *args, c, **kw):
    """Adds things."""


def _documented(a, b=1, *args, c, **kw):
    """Adds things.

    Parameters
    ----------
    a, b : int
        Numbers.
    *args
        More numbers.
    c : int
        A keyword.
    **kw
        Options.

    Returns
    -------
    int
        The sum.
    """


class _Result:
    """A result.

    Attributes
    ----------
    x : float
        A number.
    """

    def __init__(self, x, y):
        self.x, self.y = x, y

    @property
    def z(self):
        return 0

    def method(self, k):
        """Does it."""


def test_the_check_reports_each_gap():
    from numpydoc.docscrape import FunctionDoc

    problems = apicheck._check_routine("f", _undocumented, FunctionDoc(_undocumented), skip_first=False)
    assert problems == [
        "f: parameter 'a' not under Parameters",
        "f: parameter 'b' not under Parameters",
        "f: parameter 'args' not under Parameters",
        "f: parameter 'c' not under Parameters",
        "f: parameter 'kw' not under Parameters",
        "f: no Returns section",
    ]
    assert apicheck._check_routine("f", _documented, FunctionDoc(_documented), skip_first=False) == []
    assert apicheck._check_class("C", _Result) == [
        "C: constructor argument 'y' under neither Parameters nor Attributes",
        "C.z: property without a docstring",
        "C.method: parameter 'k' not under Parameters",
        "C.method: no Returns section",
    ]


DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_every_public_name_says_what_it_implements():
    problems = apicheck.reference_problems(DOCS)
    assert problems == [], "\n".join(problems)


def test_the_reference_check_reports_a_missing_row_and_a_missing_citation(tmp_path):
    text = (DOCS / apicheck.REFERENCE_PAGE).read_text(encoding="utf-8")
    text = text.replace("| `sample_gram_batch` |", "| `not_a_name` |")
    text = text.replace("| `TrainOptions` | *tooling*:", "| `TrainOptions` | Theorem 1:")
    (tmp_path / apicheck.REFERENCE_PAGE).write_text(text, encoding="utf-8")
    problems = apicheck.reference_problems(tmp_path)
    assert len(problems) == 2, problems
    assert problems[0].startswith("relucore.TrainOptions: implements 'Theorem 1:")
    assert problems[1].startswith("relucore.sample_gram_batch: not in the table")
