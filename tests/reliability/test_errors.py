"""docs/errors.md is the specification: every row of its tables is run here.

The bad-input table gives a call, the exception it must raise (exactly that
class: a numpy LinAlgError or a bare FloatingPointError would not do), the
argument the message must name and a fragment of the message. The status table
gives calls that run into numerical trouble and the status they must end with;
the last table gives inputs that are converted and must give bitwise the same
result as their converted form. The docs and the tests cannot drift apart.
"""

import inspect
import pathlib
import re

import numpy as np
import pytest

import relucore

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "errors.md"
EXCEPTIONS = {"ValueError": ValueError, "TypeError": TypeError, "DivergenceError": relucore.DivergenceError}


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _unquote(cell):
    return cell[1:-1] if cell.startswith("`") and cell.endswith("`") else cell


def parse_tables(text):
    """All markdown tables of ``text`` as lists of dicts keyed by the header cells."""
    tables, block = [], []
    for line in text.splitlines() + [""]:
        if line.startswith("|"):
            block.append(line)
            continue
        if block:
            header = _cells(block[0])
            rows = [dict(zip(header, map(_unquote, _cells(l)))) for l in block[2:]]
            for _r, l in zip(rows, block[2:]):
                assert len(_cells(l)) == len(header), f"malformed row in {DOC.name}: {l}"
            tables.append((tuple(header), rows))
            block = []
    return tables


def table(header):
    found = [rows for h, rows in parse_tables(DOC.read_text(encoding="utf-8")) if h == header]
    assert len(found) == 1, f"{DOC.name} must hold exactly one table with header {header}"
    return found[0]


BAD = table(("argument", "bad input", "call", "raises", "message contains"))
STATUS = table(("situation", "call", "status", "message contains"))
ACCEPTED = table(("input", "call", "same as"))


@pytest.fixture(scope="module")
def ns():
    """The namespace built by the python set-up blocks of the doc."""
    namespace = {}
    for block in re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S):
        exec(compile(block, str(DOC), "exec"), namespace)
    assert namespace["train"] is relucore.train
    return namespace


@pytest.mark.parametrize("row", BAD, ids=[f"{r['argument']}: {r['bad input']}" for r in BAD])
def test_bad_input_row(row, ns):
    expected = EXCEPTIONS[row["raises"]]
    with pytest.raises(Exception) as info:
        eval(row["call"], ns)
    assert type(info.value) is expected, f"{row['call']} raised {type(info.value).__name__}: {info.value}"
    message = str(info.value)
    assert row["message contains"] in message, message
    assert row["argument"] in message, f"the message does not name {row['argument']!r}: {message}"


def _all_finite(res, b):
    parts = [res.alpha, res.beta, res.W, res.loss, res.grad_norm]
    return all(np.isfinite(np.asarray(p)[b] if res.batched else np.asarray(p)).all() for p in parts if p is not None)


@pytest.mark.parametrize("row", STATUS, ids=[r["situation"] for r in STATUS])
def test_status_row(row, ns):
    res = eval(row["call"], ns)
    expected = np.asarray(eval(row["status"]))
    assert np.array_equal(np.asarray(res.status), expected), res.message
    messages = res.message if isinstance(res.message, list) else [res.message]
    assert any(row["message contains"] in m for m in messages), messages
    assert np.array_equal(np.asarray(res.success), expected == 0)
    for b, s in enumerate(np.atleast_1d(expected)):
        # No NaN or infinity leaks into a result that is not marked diverged.
        if s != 2:
            assert _all_finite(res, b), row["call"]


@pytest.mark.parametrize("row", ACCEPTED, ids=[r["input"] for r in ACCEPTED])
def test_accepted_row(row, ns):
    got, ref = eval(row["call"], ns), eval(row["same as"], ns)
    assert np.array_equal(got.W, ref.W) and np.array_equal(got.beta, ref.beta) and got.loss == ref.loss


def test_every_parameter_of_train_has_a_row():
    """A new parameter of train needs its failure modes documented in the table."""
    documented = {r["argument"] for r in BAD}
    assert set(inspect.signature(relucore.train).parameters) <= documented


def test_the_table_covers_the_categories_of_issue_8():
    kinds = " ".join(r["bad input"] for r in BAD)
    for kind in [
        "NaN",
        "infinity",
        "wrong ndim",
        "inconsistent lengths",
        "empty",
        "complex",
        "string",
        "m = 0",
        "negative",
        "n > d",
        "repeated example",
        "collinear",
        "logistic",
        "disjoint",
    ]:
        assert kind in kinds, kind
    messages = [r["message contains"] for r in BAD if "rank-deficient" in r["message contains"]]
    assert messages and all("cond(K) =" in m for m in messages)


def test_condition_number_in_the_message_is_the_true_one(ns):
    X = ns["X"]
    # Close enough to be refused, far enough for cond(K) to be computable:
    # the singular values of X give it independently, as (s_max / s_min)^2.
    X_close = np.vstack([X[:4], X[:1] + 3e-7 * X[4:]])
    with pytest.raises(ValueError) as info:
        relucore.train(X_close, ns["y"])
    reported = float(re.search(r"cond\(K\) = ([0-9.e+-]+)", str(info.value)).group(1))
    s = np.linalg.svd(X_close, compute_uv=False)
    assert reported > relucore.gd.defaults.MAX_CONDITION
    assert reported == pytest.approx((s[0] / s[-1]) ** 2, rel=0.02)
