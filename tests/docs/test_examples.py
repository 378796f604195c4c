"""Every ```python block of README.md and docs/*.md runs, as written.

Each block is one test, with the id "FILE:LINE" of its opening fence. The blocks of
one file run in order in one shared namespace (``__name__ == "__main__"``), as a
reader runs them top to bottom: a later block may use the names of an earlier one.
Selecting one block alone (``-k``) first runs the blocks above it in its file; if
one of those failed or was skipped, the block is reported as failed or skipped
with that block's id. Each file's blocks run in one temporary working directory,
so the files they write stay out of the checkout, with matplotlib's Agg backend.

A block runs as written except where an HTML comment directly above its fence says
otherwise (see ``_doc_blocks``): ``dask-cluster ADDRESS`` runs it against an
in-process ``dask.distributed.LocalCluster`` whose address replaces ADDRESS, and
``replace OLD NEW`` runs it with OLD replaced by NEW (a visible size reduction;
the docs say so next to the block). Nothing is skipped silently: a block is skipped
only when an optional dependency it imports (pandas, dask, matplotlib, ...) is not
installed, or when it calls a DataFrame method of a sweep table and pandas is not
installed.
"""

import ast
import linecache
import os
import re
import sys
import time
import traceback
from contextlib import contextmanager

import pytest
from _doc_blocks import ROOT, doc_files, fenced_blocks, python_blocks, runnable_source

os.environ.setdefault("MPLBACKEND", "Agg")

FILES = [f for f in doc_files() if f.exists()]
BLOCKS = [b for f in FILES for b in python_blocks(f)]
OPTIONAL = {"pandas", "dask", "distributed", "matplotlib", "sklearn", "pyarrow", "tomli"}
PANDAS_METHODS = re.compile(r"\.(groupby|iloc|loc|itertuples|describe)\b")
CODE_LINE = re.compile(r"^\s*(import \w|from [\w.]+ import |>>> )")


def _needs(source):
    """The optional modules the block imports, and pandas if it uses a DataFrame method."""
    needs = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            needs.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            needs.add(node.module.split(".")[0])
    if PANDAS_METHODS.search(source):
        needs.add("pandas")
    return sorted(needs & OPTIONAL)


@contextmanager
def _cluster(block):
    """Yield the source to run: with a dask-cluster directive, on a running LocalCluster."""
    source = runnable_source(block)
    address = block.directive("dask-cluster")
    if address is None:
        yield source
        return
    distributed = pytest.importorskip("dask.distributed")
    assert source.count(address[0]) == 1, f"{block.id}: {address[0]!r} should occur once"
    with distributed.LocalCluster(
        n_workers=1, threads_per_worker=2, processes=False, dashboard_address=":0"
    ) as cluster:
        yield source.replace(address[0], cluster.scheduler_address)


def _filename(block):
    return f"{block.path.relative_to(ROOT).as_posix()} (example at line {block.line})"


def _traceback(error, filename):
    """The traceback of `error` from the example's frame down, as Python prints it."""
    tb = error.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename != filename:
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(error), error, tb or error.__traceback__))


def _execute(block, namespace):
    for module in _needs(block.source):
        pytest.importorskip(module)
    with _cluster(block) as source:
        # Blank lines in front keep the line numbers of tracebacks those of the doc file;
        # the source is registered so that tracebacks show the block, not the whole file.
        filename = _filename(block)
        text = "\n" * block.line + source
        linecache.cache[filename] = (len(text), None, text.splitlines(True), filename)
        code = compile(text, filename, "exec")
        exec(code, namespace)
    if "matplotlib.pyplot" in sys.modules:
        sys.modules["matplotlib.pyplot"].close("all")


class FileRun:
    """The shared namespace and working directory of one doc file, and its blocks' outcomes."""

    def __init__(self, workdir):
        self.workdir = workdir
        self.namespace = {"__name__": "__main__"}
        self.outcomes = {}  # block id -> None (ran), ("skipped", reason) or ("failed", exception)

    def run(self, block):
        """Run `block` once; return its outcome."""
        if block.id not in self.outcomes:
            try:
                _execute(block, self.namespace)
                self.outcomes[block.id] = None
            except pytest.skip.Exception as e:
                self.outcomes[block.id] = ("skipped", str(e))
            except Exception as e:  # noqa: BLE001 - reported by the block's own test
                self.outcomes[block.id] = ("failed", e)
        return self.outcomes[block.id]


@pytest.fixture(scope="module")
def file_runs(tmp_path_factory):
    return {f: FileRun(tmp_path_factory.mktemp(f.stem)) for f in FILES}


@pytest.mark.skipif(not BLOCKS, reason="not running from a source checkout")
@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_doc_example_runs(block, file_runs, monkeypatch):
    state = file_runs[block.path]
    monkeypatch.chdir(state.workdir)
    for earlier in python_blocks(block.path):
        if earlier.line == block.line:
            break
        outcome = state.run(earlier)
        if outcome is not None:
            kind, what = outcome
            message = f"{earlier.id}, whose names this example may use, {kind}: {what}"
            pytest.skip(message) if kind == "skipped" else pytest.fail(message, pytrace=False)
    start = time.perf_counter()
    outcome = state.run(block)
    print(f"{block.id} ran in {time.perf_counter() - start:.2f} s")
    if outcome is not None:
        kind, what = outcome
        if kind == "skipped":
            pytest.skip(what)
        pytest.fail(f"{block.id} raised:\n{_traceback(what, _filename(block))}", pytrace=False)


@pytest.mark.skipif(not FILES, reason="not running from a source checkout")
@pytest.mark.parametrize("path", FILES, ids=[f.relative_to(ROOT).as_posix() for f in FILES])
def test_no_python_outside_python_fences(path):
    """Python code in a fence without a language tag would escape these tests (a fence
    tagged ``text`` is a deliberate transcript, e.g. a printed result, and is kept in step
    with the code by its own test)."""
    for block in fenced_blocks(path):
        if not block.lang:
            lines = [line for line in block.source.splitlines() if CODE_LINE.match(line)]
            assert not lines, f"{block.id} ({block.lang or 'no tag'}) looks like Python: tag it ```python"
