"""The short cuts of train's fixed cost give what the general code gives.

``new_result`` against the dataclass constructor, the finiteness test of the result against
``np.isfinite(...).all()``, and ``as_float_array``'s pass-through of float64 C-contiguous
arrays against the conversions it skips (same object, same checks and error texts).
"""

import dataclasses

import numpy as np
import pytest

import relucore
from relucore import _core
from relucore._validation import as_float_array
from relucore.gd.prepare import check_two_layer_options, prepare
from relucore.gd.results import TrainResult, new_result
from relucore.gd.train import run_prepared


def _fields(r):
    return {f.name: getattr(r, f.name) for f in dataclasses.fields(r)}


def _same(a, b):
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(_same(u, v) for u, v in zip(a, b))
    return type(a) is type(b) and (a == b or (a != a and b != b))


@pytest.mark.parametrize("batched", [False, True])
def test_new_result_is_the_constructed_result(batched):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((2, 6, 40) if batched else (6, 40))
    y = rng.uniform(0.2, 1, X.shape[:-1])
    res = relucore.train(X, y, signs=(1, -1), steps=30, bias=True, record=4)
    built = TrainResult(**_fields(res))
    assert type(res) is TrainResult and res.__dict__.keys() == built.__dict__.keys()
    for name, value in _fields(built).items():
        assert _same(getattr(res, name), value), name
    # The defaults of the fields not given are the dataclass's.
    minimal = {
        f.name: _fields(res)[f.name] for f in dataclasses.fields(TrainResult) if f.default is dataclasses.MISSING
    }
    fast, slow = new_result(**minimal), TrainResult(**minimal)
    assert all(_same(getattr(fast, k), v) for k, v in _fields(slow).items())
    with pytest.raises(dataclasses.FrozenInstanceError):
        fast.loss = 0.0
    with pytest.raises(TypeError, match=r"unknown TrainResult fields: \['colour'\]"):
        new_result(**minimal, colour="red")
    with pytest.raises(TypeError, match=r"fields missing: \['loss'\]"):
        new_result(**{k: v for k, v in minimal.items() if k != "loss"})


def test_as_float_array_pass_through_is_the_conversion():
    x = np.arange(6.0).reshape(2, 3)
    assert as_float_array(x, "X", ndim=2) is x  # as np.asarray(x, float64, order="C") is x
    for other in (x.T, x.astype(np.float32), x.astype(">f8"), np.ma.masked_array(x), x.tolist()):
        try:
            out = as_float_array(other, "X", ndim=2)
        except TypeError:
            continue  # the masked array: refused as before
        assert out.dtype == np.float64 and out.flags.c_contiguous and np.array_equal(out, np.asarray(other))
    for value in (x, x.tolist()):  # both paths: the same checks and words
        with pytest.raises(ValueError, match=r"X must be 1-dimensional, got an array of shape \(2, 3\)"):
            as_float_array(value, "X", ndim=1)
        bad = np.array(value, dtype=float)
        bad[1, 2] = np.nan
        with pytest.raises(ValueError, match="Input X contains NaN."):
            as_float_array(bad if value is x else bad.tolist(), "X")
        bad[1, 2] = np.inf
        with pytest.raises(ValueError, match="Input X contains infinity."):
            as_float_array(bad if value is x else bad.tolist(), "X")
        assert as_float_array(bad if value is x else bad.tolist(), "X", finite=False)[1, 2] == np.inf
    for empty in (np.empty((0, 3)), []):
        with pytest.raises(ValueError, match="X is empty"):
            as_float_array(empty, "X")
    assert as_float_array(np.empty((0, 3)), "X", allow_empty=True).shape == (0, 3)


def test_two_layer_defaults_short_cut():
    assert check_two_layer_options(False, 1.0, False, 2) == (False, 1.0, False)
    got = check_two_layer_options(np.bool_(False), 1, False, 2)  # the general path, same answer
    assert got == (False, 1.0, False) and type(got[1]) is float
    assert check_two_layer_options(False, "1/m", False, 4) == (False, 0.25, False)  # a named rule of the width
    with pytest.raises(TypeError, match="bias must be True or False"):
        check_two_layer_options(False, 1.0, 0, 2)


@pytest.mark.parametrize("engine", ["dual", "weights"])
@pytest.mark.parametrize("bias", [False, True])
def test_W_in_the_block_of_W0_is_the_fresh_array_result(engine, bias):
    """W written into the second half of W0's allocation (Prepared.W_room) is what a fresh array
    gets; W0 is left as it was; a second run of the same Prepared writes a new array."""
    rng = np.random.default_rng(7)
    X = rng.standard_normal((3, 6, 40))
    y = rng.uniform(0.2, 1, (3, 6))
    options = dict(signs=(1, -1, 1), engine=engine, bias=bias, init="gaussian", rng=5)
    p = prepare(X, y, **options)
    assert p.W_room is not None and p.W_room.shape == p.W0.shape and p.W_room.base is p.W0.base
    W0_before = p.W0.copy()
    first = run_prepared(p, steps=60, record=0, n_threads=1, engine=engine, on_divergence="status")
    assert p.W_room is None  # taken by the first run
    W_first = first.W.copy()
    fresh = dataclasses.replace(prepare(X, y, **options), W_room=None)  # a new array for W, as before
    ref = run_prepared(fresh, steps=60, record=0, n_threads=1, engine=engine, on_divergence="status")
    for name in ("W", "W0", "alpha", "beta"):
        assert _same(getattr(first, name), getattr(ref, name)), name
    assert p.W0.tobytes() == W0_before.tobytes()
    again = run_prepared(p, steps=30, record=0, n_threads=1, engine=engine, on_divergence="status")
    assert not np.shares_memory(again.W, first.W) and first.W.tobytes() == W_first.tobytes()
    if not bias:  # the result's W0 and W are the two halves of one block
        assert first.W0.base is first.W.base and first.W0.base.shape == (2,) + first.W.shape


def _dual_run(p, steps, n_threads, with_w):
    """``_core.run_dual_batch`` on a prepared batch, forming W in the same call or not."""
    alpha, beta = p.alpha0.copy(), p.beta0.copy()
    extra = dict(X=p.X, W0=p.W0, alpha0=p.alpha0, W=np.empty_like(p.W0)) if with_w else {}
    out = _core.run_dual_batch(
        K=p.K, y=p.y, outer=p.signs, alpha=alpha, beta=beta, eta=p.eta, tol=p.tol,
        settings=p.settings(steps, 0), history={"limit": 0}, n_threads=n_threads, **extra,
    )  # fmt: skip
    return out, alpha, beta, extra.get("W")


@pytest.mark.parametrize("n_threads", [1, 2])
def test_dual_run_forms_W_as_weights_from_dual_batch(n_threads):
    """The W run_dual_batch writes after each problem's run is weights_from_dual_batch's, bit for bit;
    its "finite" flag is np.isfinite over the final loss, gradient norm, alpha, beta and W."""
    rng = np.random.default_rng(11)
    X = rng.standard_normal((3, 8, 300))
    y = rng.uniform(0.2, 1, (3, 8))
    p = prepare(X, y, signs=(1, -1, 1), init="gaussian", rng=2, engine="dual")
    out, alpha, beta, W = _dual_run(p, 200, n_threads, True)
    out2, alpha2, beta2, _ = _dual_run(p, 200, n_threads, False)
    assert alpha.tobytes() == alpha2.tobytes() and beta.tobytes() == beta2.tobytes()
    ref = np.empty_like(p.W0)
    _core.weights_from_dual_batch(X=p.X, W0=p.W0, alpha0=p.alpha0, alpha=alpha, W=ref, n_threads=1)
    assert W.tobytes() == ref.tobytes()
    assert out.finite.dtype == np.uint8 and out.finite.tolist() == [1, 1, 1] == out2.finite.tolist()
    # An overflowing problem (the middle one: a step far too large) is flagged, the others not.
    p.eta[1] = 1e300
    out, alpha, beta, W = _dual_run(p, 50, n_threads, True)
    state = [np.isfinite(a[b]).all() for a in (alpha, beta, W) for b in range(3)]
    expect = [int(np.isfinite(out.loss[b]) and np.isfinite(out.grad_norm[b]) and all(state[b::3])) for b in range(3)]
    assert out.finite.tolist() == expect and expect[0] == expect[2] == 1 and expect[1] == 0
    with pytest.raises(ValueError, match="X, W0, alpha0 and W go together"):
        _core.run_dual_batch(
            K=p.K, y=p.y, outer=p.signs, alpha=alpha, beta=beta, eta=p.eta, tol=p.tol,
            settings=p.settings(1, 0), history={"limit": 0}, X=p.X,
        )  # fmt: skip
