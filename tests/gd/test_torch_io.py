"""relucore.from_torch / TrainResult.to_torch, and relucore's run of a PyTorch model against a
float64 torch.optim.SGD loop (skipped without torch; the ImportError test always runs)."""

import sys

import numpy as np
import pytest

import relucore


def test_clear_import_error_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # import torch raises ImportError
    with pytest.raises(ImportError, match=r"relucore\[torch\]"):
        relucore.from_torch(object())
    r = relucore.train(np.eye(3), np.ones(3), steps=2)
    with pytest.raises(ImportError, match="pip install"):
        r.to_torch()


def _model(torch, d, m, *, bias=True, out_bias=True, leaky=None, zero_outer=False, seed=0):
    torch.manual_seed(seed)
    act = torch.nn.ReLU() if leaky is None else torch.nn.LeakyReLU(leaky)
    model = torch.nn.Sequential(torch.nn.Linear(d, m, bias=bias), act, torch.nn.Linear(m, 1, bias=out_bias)).double()
    if zero_outer:
        with torch.no_grad():
            model[2].weight.zero_()
            if out_bias:
                model[2].bias.zero_()
    return model


def _torch_sgd(torch, model, X, y, w, lr, steps):
    """Full-batch float64 SGD on mean(w (h - y)^2)."""
    Xt, yt, wt = (torch.from_numpy(a) for a in (X, y, w))
    opt = torch.optim.SGD(model.parameters(), lr=lr)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.mean(wt * (model(Xt)[:, 0] - yt) ** 2)
        loss.backward()
        opt.step()
    with torch.no_grad():
        return model(Xt)[:, 0].numpy().copy(), model[0].weight.numpy().copy(), float(loss)


def _rel(a, b):
    return np.max(np.abs(a - b)) / np.max(np.abs(b))


@pytest.mark.parametrize("n, d", [(40, 6), (8, 30)])
@pytest.mark.parametrize("zero_outer", [False, True])
def test_matches_torch_sgd(n, d, zero_outer):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(n + d)
    X = rng.standard_normal((n, d))
    y = rng.standard_normal(n)
    w = rng.uniform(0.5, 1.5, n)
    w[1] = 0.0
    model = _model(torch, d, 10, zero_outer=zero_outer, seed=n)
    lr, steps = 0.02, 2000
    kw = relucore.from_torch(model)
    r = relucore.train(X, y, **kw, train_outer=True, reduction="mean", sample_weight=w, eta=lr, steps=steps, tol=0)
    h, W, _ = _torch_sgd(torch, model, X, y, w, lr, steps)
    assert r.nit == steps
    assert _rel(r.predictions, h) <= 1e-10
    assert _rel(r.W, W) <= 1e-10
    back = r.to_torch()
    with torch.no_grad():
        h_back = back(torch.from_numpy(X))[:, 0].numpy()
    assert _rel(h_back, r.predictions) <= 1e-13


@pytest.mark.parametrize("bias, out_bias, leaky", [(False, False, None), (True, False, 0.1), (False, True, None)])
def test_round_trip(bias, out_bias, leaky):
    torch = pytest.importorskip("torch")
    model = _model(torch, 4, 7, bias=bias, out_bias=out_bias, leaky=leaky).float()  # float32 read as float64
    kw = relucore.from_torch(model)
    assert kw["bias"] is bias and (kw["output_bias"] is None) is (not out_bias)
    assert kw["activation"] == ("relu" if leaky is None else "leaky_relu")
    if leaky is not None:
        assert kw["leaky_slope"] == leaky
    assert kw["init"].dtype == np.float64 and kw["init"].shape == (7, 4 + bias)
    np.testing.assert_array_equal(kw["init"][:, :4], model[0].weight.detach().double().numpy())
    X = np.random.default_rng(1).standard_normal((9, 4))
    r = relucore.train(X, np.ones(9), **kw, train_outer=True, eta=0.01, steps=50)
    back = r.to_torch()
    assert back[0].weight.dtype == torch.float64
    with torch.no_grad():
        h = back(torch.from_numpy(X))[:, 0].numpy()
    assert _rel(h, r.predictions) <= 1e-13
    np.testing.assert_array_equal(back[0].weight.detach().numpy(), r.W)


def test_refusals():
    torch = pytest.importorskip("torch")
    nn = torch.nn
    for bad in (
        nn.Sequential(nn.Linear(3, 4), nn.Tanh(), nn.Linear(4, 1)),
        nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 2)),
        nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 4), nn.ReLU(), nn.Linear(4, 1)),
        nn.Linear(3, 1),
    ):
        with pytest.raises(ValueError, match=r"supports nn\.Sequential\(nn\.Linear\(d, m"):
            relucore.from_torch(bad)
    K = np.eye(4) + 0.1
    r = relucore.train(gram=K, y=np.ones(4), steps=3)
    with pytest.raises(ValueError, match="Gram-only"):
        r.to_torch()
    rb = relucore.train(np.stack([np.eye(3)] * 2), np.ones((2, 3)), steps=3)
    with pytest.raises(ValueError, match="batch"):
        rb.to_torch()


def test_trainer_from_torch_steps_like_train():
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    X, y, w = rng.standard_normal((12, 5)), rng.standard_normal(12), rng.uniform(0.5, 1.5, 12)
    kw = dict(relucore.from_torch(_model(torch, 5, 6, seed=2)), train_outer=True, reduction="mean", sample_weight=w)
    t = relucore.Trainer(X, y, **kw, eta=0.05, tol=0)
    t.step(300)
    r = relucore.train(X, y, **kw, eta=0.05, steps=300, tol=0, engine="dual")
    res = t.run(until=300)
    np.testing.assert_array_equal(res.W, r.W)
    assert res.output_bias == r.output_bias
    back = res.to_torch()
    with torch.no_grad():
        h = back(torch.from_numpy(X))[:, 0].numpy()
    assert _rel(h, r.predictions) <= 1e-13
