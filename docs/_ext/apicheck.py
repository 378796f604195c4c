"""Checks of the API reference: numpydoc sections of every public name, and docstring examples.

Used by the documentation build (``docs/conf.py`` turns every problem into a warning, so an
error under ``-W``) and by the tests (``tests/docs/test_api_reference.py``,
``tests/docs/test_docstrings.py``), so the rules live here once.

The public names are the ``__all__`` of each module of :data:`API_PAGES`. For each:

- a function: a summary line; a Parameters entry, with a description, for every parameter
  of its signature (``*args`` and ``**kw`` included; ``a, b : ...`` documents both);
  a Returns (or Yields) section;
- a class: a summary line; every parameter of its constructor documented under Parameters
  or Attributes; every public method checked as a function (``self``/``cls`` aside) and
  every public property given a summary line;
- a name that is neither (a constant) is listed with ``.. data::`` on its page instead.

Docstring examples (``>>>``) of every module of the package are found with
:class:`doctest.DocTestFinder`; none may be marked ``+SKIP``, so every example runs.
"""

from __future__ import annotations

import doctest
import enum
import importlib
import inspect
import os
import pkgutil
import re
import tempfile
from typing import Iterator, List, Tuple

#: Each public namespace and the API page that must list every name of its ``__all__``.
API_PAGES = {
    "relucore": "api/relucore.rst",
    "relucore.meanfield": "api/meanfield.rst",
    "relucore.plots": "api/plots.rst",
    "relucore.experiments": "api/experiments.rst",
}

_SKIP = re.compile(r"doctest:\s*\+SKIP")


def public_objects() -> Iterator[Tuple[str, object]]:
    """Every public name of :data:`API_PAGES` that is a function or a class, with its object."""
    for module_name in API_PAGES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isroutine(obj):
                yield f"{module_name}.{name}", obj


def _documented(section) -> dict:
    """Parameter name (stars removed) -> description, splitting ``a, b : type`` entries."""
    out = {}
    for p in section:
        for name in p.name.split(","):
            name = name.strip().lstrip("*")
            if name:
                out[name] = "\n".join(p.desc).strip()
    return out


def _signature(obj):
    try:
        return inspect.signature(obj)
    except (TypeError, ValueError):
        return None


def _check_routine(name: str, obj, doc, skip_first: bool) -> List[str]:
    problems = []
    if not "".join(doc["Summary"]).strip():
        problems.append(f"{name}: no summary line")
    sig = _signature(obj)
    params = list(sig.parameters) if sig is not None else []
    if skip_first and params and params[0] in ("self", "cls"):
        params = params[1:]
    documented = _documented(doc["Parameters"])
    for p in params:
        if p not in documented:
            problems.append(f"{name}: parameter {p!r} not under Parameters")
        elif not documented[p]:
            problems.append(f"{name}: parameter {p!r} has no description")
    for p in documented:
        if sig is not None and p not in params:
            problems.append(f"{name}: Parameters lists {p!r}, which is not in the signature")
    if not doc["Returns"] and not doc["Yields"]:
        problems.append(f"{name}: no Returns section")
    return problems


def _check_class(name: str, cls) -> List[str]:
    from numpydoc.docscrape import ClassDoc, FunctionDoc

    doc = ClassDoc(cls, config={"show_class_members": False})
    problems = []
    if not "".join(doc["Summary"]).strip():
        problems.append(f"{name}: no summary line")
    # An exception's arguments are its message; an enum is called with one of its values (its
    # signature is EnumType's functional API, not a constructor of the members).
    if not issubclass(cls, (BaseException, enum.Enum)):
        sig = _signature(cls)
        documented = _documented(doc["Parameters"]) | _documented(doc["Attributes"])
        for p in sig.parameters if sig is not None else ():
            if p not in documented:
                problems.append(f"{name}: constructor argument {p!r} under neither Parameters nor Attributes")
            elif not documented[p]:
                problems.append(f"{name}: {p!r} has no description")
    for attr, value in vars(cls).items():
        if attr.startswith("_"):
            continue
        where = f"{name}.{attr}"
        if isinstance(value, property):
            if not (inspect.getdoc(value) or "").strip():
                problems.append(f"{where}: property without a docstring")
        elif isinstance(value, (classmethod, staticmethod)) or inspect.isfunction(value):
            func = getattr(cls, attr)
            problems += _check_routine(where, func, FunctionDoc(func), skip_first=inspect.isfunction(value))
    return problems


def docstring_problems() -> List[str]:
    """Every missing summary, parameter or Returns section of the public API (empty: all documented)."""
    from numpydoc.docscrape import FunctionDoc

    problems = []
    for name, obj in public_objects():
        if inspect.isclass(obj):
            problems += _check_class(name, obj)
        else:
            problems += _check_routine(name, obj, FunctionDoc(obj), skip_first=False)
    return problems


def docstring_tests() -> List[doctest.DocTest]:
    """The docstring examples of every module of the package, one test per docstring, by name."""
    import relucore

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


def skipped_examples(tests: List[doctest.DocTest]) -> List[str]:
    """The examples marked ``+SKIP`` (which would never run), as ``test name: source``."""
    return [f"{t.name}: {e.source.strip()}" for t in tests for e in t.examples if _SKIP.search(e.source)]


def run_docstring_test(test: doctest.DocTest) -> str:
    """Run one docstring's examples as ``pytest --doctest-modules`` does; the failure report, or ''.

    Globals: a copy of the module's; option flag ELLIPSIS; the working directory a fresh
    temporary one (files an example writes stay out of the checkout).
    """
    report = []
    runner = doctest.DocTestRunner(verbose=False, optionflags=doctest.ELLIPSIS)
    test.globs = dict(test.globs)
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        try:
            result = runner.run(test, out=report.append, clear_globs=True)
        finally:
            os.chdir(here)
    return "".join(report) if result.failed else ""


#: The page whose table says what each public name implements, and its section.
REFERENCE_PAGE = "theory.md"
REFERENCE_SECTION = "## What each public name implements"
#: A citation of a paper's result (or of the docs/math.md section deriving it).
CITATION = re.compile(r"(Theorems?|Lemmas?|Corollary|Assumptions?|Eq\.|Sec\.|App\.|Figs?\.)\s*\(?[\dA-Z]|math\.md §")


def reference_table(docs_dir) -> dict:
    """``{public name: what it implements}`` from the table of :data:`REFERENCE_PAGE`.

    A row may list several names (``\\`a\\`, \\`b\\```) in its first cell; names are written
    without the ``relucore.`` prefix (``train``, ``meanfield.train``).
    """
    from pathlib import Path

    text = (Path(docs_dir) / REFERENCE_PAGE).read_text(encoding="utf-8")
    start = text.index(REFERENCE_SECTION)
    end = text.find("\n## ", start + 1)
    rows = {}
    for line in text[start : end if end >= 0 else None].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 2 and line.lstrip().startswith("|"):
            for name in re.findall(r"`([\w.]+)`", cells[0]):
                rows[name] = cells[1]
    return rows


def reference_problems(docs_dir) -> List[str]:
    """Public names missing from the table, and names the table cites a paper for whose docstring cites none."""
    rows = reference_table(docs_dir)
    problems = []
    for name, obj in public_objects():
        short = name[len("relucore.") :]
        if short not in rows:
            problems.append(f"{name}: not in the table of docs/{REFERENCE_PAGE} ({REFERENCE_SECTION[3:]})")
        elif "*tooling*" not in rows[short] and not CITATION.search(inspect.getdoc(obj) or ""):
            problems.append(f"{name}: implements {rows[short]!r} but its docstring cites no equation or theorem")
    return problems
