"""PyTorch in and out: :func:`from_torch` and :func:`to_torch` (``TrainResult.to_torch``).

relucore trains ``h(x) = b_out + c sum_k a_k phi(w_k^T x + b_k)``, which PyTorch writes
``nn.Sequential(nn.Linear(d, m), nn.ReLU(), nn.Linear(m, 1))``. :func:`from_torch` reads such a
module's parameters as the keywords of :func:`relucore.train`; :func:`to_torch` writes a result's
final parameters into a new module of that shape. PyTorch is optional (``pip install
'relucore[torch]'``) and imported only when one of them is called. Parameters are read as
float64 (a float32 module's values are exactly representable in float64; its float32 rounding
of later steps is not reproduced) and the module returned is float64.
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from relucore.gd.defaults import LEAKY_SLOPE

__all__ = ["from_torch", "to_torch"]

SUPPORTED = "nn.Sequential(nn.Linear(d, m[, bias]), nn.ReLU() | nn.LeakyReLU(negative_slope), nn.Linear(m, 1[, bias]))"


def _torch():
    """The torch module, or an ImportError that says how to install it."""
    try:
        import torch
    except ImportError as exc:  # pragma: no cover - the message is tested with torch hidden
        raise ImportError(
            "relucore.from_torch and TrainResult.to_torch need PyTorch, which relucore does not install by "
            "default: pip install 'relucore[torch]' (or pip install torch)"
        ) from exc
    return torch


def _layers(module, torch):
    """The three layers of a supported module, or ValueError naming the supported shape."""
    nn = torch.nn
    layers = list(module) if isinstance(module, nn.Sequential) else None
    ok = (
        layers is not None
        and len(layers) == 3
        and type(layers[0]) is nn.Linear
        and type(layers[1]) in (nn.ReLU, nn.LeakyReLU)
        and type(layers[2]) is nn.Linear
        and layers[2].in_features == layers[0].out_features
        and layers[2].out_features == 1
    )
    if not ok:
        raise ValueError(f"from_torch supports {SUPPORTED} only, got {module!r}")
    return layers


def _array(t) -> np.ndarray:
    return np.array(t.detach().cpu().double().numpy(), dtype=np.float64)


def from_torch(module) -> Dict[str, Any]:
    """The keywords of :func:`relucore.train` that start from a PyTorch module's parameters.

    Parameters
    ----------
    module : torch.nn.Sequential
        ``nn.Sequential(nn.Linear(d, m[, bias]), nn.ReLU() | nn.LeakyReLU(gamma), nn.Linear(m, 1[, bias]))``;
        any floating dtype (read as float64). Other shapes raise ValueError naming this one.

    Returns
    -------
    dict
        ``init`` (the first layer's weights (m, d), with its biases as a last column when it has
        them), ``signs`` (the second layer's weights (m,)), ``bias`` (whether the first layer
        has biases), ``output_bias`` (the second layer's bias, or None), ``activation`` and
        ``leaky_slope``. ``relucore.train(X, y, **from_torch(model), train_outer=True,
        reduction="mean", eta=lr)`` is full-batch ``torch.optim.SGD(model.parameters(), lr)`` on
        ``F.mse_loss``. A zero in ``signs`` needs ``train_outer=True``.
    """
    torch = _torch()
    first, act, second = _layers(module, torch)
    W = _array(first.weight)
    if first.bias is not None:
        W = np.concatenate([W, _array(first.bias)[:, None]], axis=1)
    leaky = type(act) is torch.nn.LeakyReLU
    return {
        "init": W,
        "signs": _array(second.weight)[0],
        "bias": first.bias is not None,
        "output_bias": None if second.bias is None else float(_array(second.bias)[0]),
        "activation": "leaky_relu" if leaky else "relu",
        "leaky_slope": float(act.negative_slope) if leaky else LEAKY_SLOPE,
    }


def to_torch(result):
    """A float64 PyTorch module holding a result's final parameters (see :func:`from_torch`).

    Parameters
    ----------
    result : relucore.TrainResult
        One problem's result of :func:`relucore.train` or :class:`relucore.Trainer` with W (not a
        Gram-only run, not a batch).

    Returns
    -------
    torch.nn.Sequential
        ``nn.Sequential(nn.Linear(d, m[, bias]), nn.ReLU() | nn.LeakyReLU(gamma), nn.Linear(m, 1[, bias]))``
        whose second layer holds ``output_scale * outer`` and the output bias; its predictions on
        the training inputs equal ``result.predictions`` to rounding.
    """
    torch = _torch()
    if result.W is None:
        raise ValueError(
            "to_torch needs the first-layer weights W: a Gram-only result (trained from gram=K) has none; "
            "train from X instead"
        )
    if result.batched:
        raise ValueError("to_torch takes one problem's result: this one is a batch (train each problem alone)")
    nn = torch.nn
    W = np.asarray(result.W, dtype=np.float64)
    m, d = W.shape
    first = nn.Linear(d, m, bias=result.bias is not None, dtype=torch.float64)
    act = nn.ReLU() if result.activation == "relu" else nn.LeakyReLU(result.leaky_slope)
    second = nn.Linear(m, 1, bias=result.output_bias is not None, dtype=torch.float64)
    outer = result.signs if result.outer is None else result.outer
    with torch.no_grad():
        first.weight.copy_(torch.from_numpy(W.copy()))
        if result.bias is not None:
            first.bias.copy_(torch.from_numpy(np.asarray(result.bias, dtype=np.float64).copy()))
        second.weight.copy_(torch.from_numpy((result.output_scale * np.asarray(outer, dtype=np.float64))[None, :]))
        if result.output_bias is not None:
            second.bias.fill_(float(result.output_bias))
    return nn.Sequential(first, act, second)
