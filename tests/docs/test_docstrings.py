"""Every ``>>>`` example in the docstrings of the relucore package runs and prints what it shows.

The examples are found with ``doctest.DocTestFinder`` in every module of the package
and run as ``pytest --doctest-modules`` runs them (globals: a copy of the module's,
option flag ELLIPSIS), one test per docstring, in a temporary working directory.
No example may be marked ``# doctest: +SKIP``: every one runs, here and in the
documentation build. The rules live in ``docs/_ext/apicheck.py``, which the docs build
(``docs/conf.py``) uses too.
"""

import os
import sys
from pathlib import Path

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "docs" / "_ext"))

import apicheck  # noqa: E402

TESTS = apicheck.docstring_tests()


def test_docstring_examples_found():
    assert any(t.name == "relucore.gd.train.train" for t in TESTS), [t.name for t in TESTS]


def test_no_docstring_example_is_skipped():
    assert apicheck.skipped_examples(TESTS) == []


def test_a_skipped_example_is_reported():
    import doctest

    test = doctest.DocTestParser().get_doctest(">>> 1  # doctest: +SKIP\n1\n", {}, "t", None, 0)
    assert apicheck.skipped_examples([test]) == ["t: 1  # doctest: +SKIP"]


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_docstring_example(test, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    report = apicheck.run_docstring_test(test)
    if report:
        pytest.fail(report, pytrace=False)
