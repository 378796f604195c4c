"""Sweep keys ``loss`` (formerly ``loss_name``), ``train_outer``, ``output_scale`` and ``bias``."""

import numpy as np
import pytest

import relucore
from relucore.sweeps.config import DEFAULTS, FORMAT_CHANGES, SWEEP_FORMAT, expand_grid, stored_config


def test_loss_key_and_its_table_column():
    # seed 1: both draws converge (with seed 0 one of d = 60 draws stalls)
    t = relucore.sweep({"n": 5, "d": 60, "loss": ["square"]}, trials=2, rng=1, progress=False)
    assert list(t["loss_name"]) == ["square", "square"]
    assert t["loss"].dtype == float  # the final loss keeps its column
    assert np.all(t["status"] == "converged")


def test_old_key_loss_name_is_refused_naming_loss():
    with pytest.raises(ValueError, match="'loss_name' was renamed in 1.0: use 'loss'"):
        relucore.sweep({"n": 5, "d": 60, "loss_name": "square"}, trials=2, rng=0, progress=False)
    with pytest.raises(ValueError, match="'loss_name' was renamed"):
        expand_grid({"loss_name": "square", "loss": "square"})
    assert stored_config({"loss_name": "square"})["loss"] == "square"  # old stores are data: still read


def test_two_layer_keys_reach_train():
    grid = {"n": 6, "d": 40, "m": 2, "train_outer": True, "bias": True, "output_scale": 0.5}
    grid.update(minnorm=False, steps=200, tol=0.0, eta=0.2)
    t = relucore.sweep(grid, trials=2, rng=1, progress=False)
    assert list(t["train_outer"]) == [True, True] and list(t["bias"]) == [True, True]
    assert list(t["output_scale"]) == [0.5, 0.5]
    # a row is train with the same options on the trial's data
    cfg = expand_grid(grid)[0]
    for trial in range(2):
        ss = eval(t["seed"][trial], {"SeedSequence": np.random.SeedSequence})
        data = relucore.sample(cfg["n"], cfg["d"], rng=np.random.default_rng(ss))
        kw = dict(signs=(1, -1), train_outer=True, bias=True, output_scale=0.5, steps=200, tol=0.0, eta=0.2)
        res = relucore.train(data.X, data.y, **kw)
        assert res.loss == t["loss"][trial] and res.nit == t["nit"][trial]
        assert np.max(np.abs(res.outer - [1, -1])) > 1e-6  # the outer layer moved


@pytest.mark.parametrize(
    "cfg, exc, text",
    [
        ({"train_outer": True}, ValueError, "set 'minnorm': False"),
        ({"bias": 1}, TypeError, "must be a bool"),
        ({"output_scale": 0.0, "minnorm": False}, ValueError, "output_scale'] must be a positive number"),
        ({"output_scale": True, "minnorm": False}, ValueError, "must be a positive number"),
    ],
)
def test_bad_two_layer_keys(cfg, exc, text):
    with pytest.raises(exc, match=text):
        expand_grid(cfg)


def test_old_stored_configurations_read_under_the_new_keys():
    old = {k: v for k, v in DEFAULTS.items() if k not in ("loss", "train_outer", "output_scale", "bias")}
    old["loss_name"] = "logistic"
    new = stored_config(old)
    assert new["loss"] == "logistic" and "loss_name" not in new
    assert new["train_outer"] is False and new["output_scale"] == 1.0 and new["bias"] is False


def test_format_2_names_the_rename():
    assert SWEEP_FORMAT == 3  # format 3: gap_normalised -> gap_normalized (1.0's one vocabulary)
    assert "'loss_name' is 'loss'" in FORMAT_CHANGES[2]
    assert "gap_normalised is gap_normalized" in FORMAT_CHANGES[3]
