"""The shared summary helper: short reprs for any size, placeholders for arrays, per-batch summaries."""

import dataclasses
from typing import Optional

import numpy as np

from relucore._summary import MAX_LINES, describe, per_problem, placeholder, summarized


@summarized(
    title=lambda r: f"B={r.status.shape[0]}", rows=("status", "loss", "inner"), batch=lambda r: r.status.shape[0]
)
@dataclasses.dataclass(frozen=True)
class _Batch:
    status: np.ndarray
    loss: np.ndarray
    inner: Optional["_Inner"]
    big: np.ndarray
    other: np.ndarray


@summarized(title=lambda r: "inner", rows=None)
@dataclasses.dataclass(frozen=True)
class _Inner:
    value: float
    weights: np.ndarray


def test_placeholder_and_values():
    a = np.zeros((3, 4))
    assert placeholder(a) == "array(shape=(3, 4), dtype=float64)"
    assert describe(a) == placeholder(a)
    assert describe(np.array([1.0, -1.0])) == "array([1., -1.])"
    assert describe(np.arange(100)) == "array([0, 1, 2, ..., 97, 98, 99], shape=(100,))"
    assert describe(np.zeros((0, 3))) == "array(shape=(0, 3), dtype=float64)"
    assert describe(0.5) == "0.5" and describe(True) == "True" and describe(None) == "None"
    assert describe({"N": 10, "step": 0.5}) == "N=10, step=0.5"
    assert describe({"X": np.zeros(3)}) == "dict with keys X"


def test_per_problem_summaries():
    assert per_problem(np.array([True, False, True])) == "2 of 3"
    assert per_problem(np.array([3, 1, 2])) == "1 .. 3 (median 2)"
    assert per_problem(np.array([2.0, 2.0])) == "2 (all)"
    assert per_problem(np.array([1.0, np.nan, 3.0])) == "1 .. 3 (median 2), 1 not finite"
    assert per_problem(["a", "b", "a"]) == "2 × a, 1 × b"


def test_batch_of_any_size_keeps_the_same_lines():
    def make(B):
        rng = np.random.default_rng(0)
        return _Batch(
            rng.integers(0, 2, B), rng.random(B), _Inner(1.0, np.ones((B, 5))), np.ones((B, 7, 7)), np.ones(B)
        )

    small, large = repr(make(3)), repr(make(5000))
    assert len(small.splitlines()) == len(large.splitlines()) <= MAX_LINES
    assert "array(shape=(5000, 7, 7), dtype=float64)" in large
    assert "inner: _Inner(inner)" in large
    assert "status: 0 .. 1 (median 1)" in large


def test_line_cap_folds_the_remaining_arrays():
    fields = [(f"a{i}", np.ndarray) for i in range(40)]
    Many = summarized()(dataclasses.make_dataclass("Many", fields, frozen=True))
    text = repr(Many(*[np.zeros((i + 2, 2)) for i in range(40)]))
    lines = text.splitlines()
    assert len(lines) == MAX_LINES
    assert lines[-1].lstrip().startswith("more arrays:")


def test_to_dict_gives_the_arrays_and_nested_results():
    inner = _Inner(2.0, np.ones((2, 2)))
    b = _Batch(np.zeros(2, int), np.zeros(2), inner, np.ones((2, 3)), np.ones(2))
    d = b.to_dict()
    assert d["big"] is b.big and d["inner"] == {"value": 2.0, "weights": inner.weights}
    assert b == _Batch(b.status, b.loss, inner, b.big, b.other)  # dataclass equality untouched
