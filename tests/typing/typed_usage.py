"""A small typed program using relucore's public calls, type-checked by pyright in CI.

``.ci/typecheck.sh`` runs ``pyright`` on this file against the installed package (its ``py.typed``
and the ``_core.pyi`` stubs), with ``reportUnnecessaryTypeIgnoreComment`` on: each deliberate
mistake under ``TYPE_CHECKING`` carries an ignore comment that pyright must find necessary, so
the check fails if a signature stops declaring its parameters. ``test_typed_usage.py`` runs the
program, so what is checked also works.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
from typing_extensions import assert_type

import relucore


def run() -> float:
    ds = relucore.sample(10, 200, rng=0)
    res = relucore.train(ds.X, ds.y, signs=(1, -1), steps=2000, tol=1e-12)
    assert_type(res, relucore.TrainResult)
    status = res.status  # a Status for one problem, an array of them for a batch
    assert isinstance(status, relucore.Status) and status.success

    lim = relucore.train(ds.X, ds.y, signs=(1, -1), steps=np.inf)
    t = relucore.Trainer(ds.X, ds.y, signs=(1, -1), options=relucore.TrainOptions(eta=res.eta))
    t.step(10)
    fl = relucore.flow(ds.X, ds.y, signs=(1, -1), progress=False)
    assert_type(fl, relucore.FlowResult)
    checked = relucore.verify(lim, ds.X, ds.y)
    assert_type(checked, relucore.Verification)
    return float(fl.loss) + float(lim.loss)


if TYPE_CHECKING:
    _ds = relucore.sample(10, 200, rng=0)
    relucore.train(_ds.X, _ds.y, singns=(1, -1))  # pyright: ignore[reportCallIssue]
    relucore.train(_ds.X, _ds.y, steps="many")  # pyright: ignore[reportArgumentType]
    relucore.Trainer(_ds.X, _ds.y, progress=True)  # pyright: ignore[reportCallIssue]
    relucore.flow(_ds.X, _ds.y, eta=0.1)  # pyright: ignore[reportArgumentType]


if __name__ == "__main__":
    print(run())
