"""Every ``>>>`` example in the docstrings of the relucore package runs and prints what it shows.

The examples are found with ``doctest.DocTestFinder`` in every module of the package
and run as ``pytest --doctest-modules`` runs them (globals: a copy of the module's,
option flag ELLIPSIS), one test per docstring, in a temporary working directory.
Lines marked ``# doctest: +SKIP`` are not run.
"""

import doctest
import importlib
import os
import pkgutil

import pytest

os.environ.setdefault("MPLBACKEND", "Agg")

import relucore  # noqa: E402


def _docstring_tests():
    names = ["relucore", *(m.name for m in pkgutil.walk_packages(relucore.__path__, "relucore."))]
    finder = doctest.DocTestFinder(exclude_empty=True)
    found = {}
    for name in names:
        if name.endswith("__main__"):
            continue
        for test in finder.find(importlib.import_module(name), name):
            if test.examples:
                found.setdefault(test.name, test)
    return [found[k] for k in sorted(found)]


TESTS = _docstring_tests()


def test_docstring_examples_found():
    assert any(t.name == "relucore.gd.train.train" for t in TESTS), [t.name for t in TESTS]


@pytest.mark.parametrize("test", TESTS, ids=[t.name for t in TESTS])
def test_docstring_example(test, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    report = []
    runner = doctest.DocTestRunner(verbose=False, optionflags=doctest.ELLIPSIS)
    test.globs = dict(test.globs)
    result = runner.run(test, out=report.append, clear_globs=True)
    if result.failed:
        pytest.fail("".join(report), pytrace=False)
