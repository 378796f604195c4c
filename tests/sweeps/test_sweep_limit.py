"""steps = inf in a sweep configuration: the certified limit and its certificate columns."""

import numpy as np
import pytest

import relucore
from relucore.sweeps.config import expand_grid, normalise_config

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def test_steps_inf_is_kept_as_plain_json_and_finite_keys_are_unchanged():
    assert normalise_config({"steps": np.inf})["steps"] == "inf"
    assert normalise_config({"steps": "inf"})["steps"] == "inf"
    assert normalise_config({"steps": 500})["steps"] == 500
    with pytest.raises(ValueError):
        normalise_config({"steps": -np.inf})
    with pytest.raises(TypeError):
        normalise_config({"steps": "many"})
    # Both spellings are one configuration (and so share their seeds).
    with pytest.raises(ValueError, match="identical"):
        expand_grid([{"steps": np.inf}, {"steps": "inf"}])


@pytest.mark.parametrize("use_gram", [False, True])
def test_limit_columns_match_train_steps_inf(use_gram):
    from numpy.random import SeedSequence  # noqa: F401  (used by eval)

    from relucore.sweeps.row_data import row_data

    grid = {"n": 8, "d": 400, "m": 2, "steps": [np.inf, 2000], "use_gram": use_gram, "gram_stats": False}
    table = relucore.sweep(grid, trials=3, rng=5, progress=False)
    limit = table[table.config_index == 0]
    plain = table[table.config_index == 1]
    assert np.all(np.isinf(limit.steps)) and np.all(plain.steps == 2000)
    assert np.all(plain.limit_holds == -1) and np.all(plain.limit_step == -1) and plain.limit_margin.isna().all()
    cfg = expand_grid(grid)[0]
    for _, row in limit.iterrows():
        data = row_data(row)
        assert data.config == cfg
        if use_gram:
            ref = relucore.train(None, data.y, gram=data.K, signs=(1.0, -1.0), steps=np.inf)
        else:
            ref = relucore.train(data.X, data.y, signs=(1.0, -1.0), steps=np.inf)
        cert = ref.certificate
        assert row.limit_holds == int(cert.holds)
        assert row.limit_step == cert.step
        # The sweep forms K for the batch: the same problem up to the last bits of K.
        assert row.limit_margin == pytest.approx(cert.margin, rel=1e-9)
        assert row.loss == pytest.approx(ref.loss, rel=1e-6, abs=1e-20)
        assert row.nit == ref.nit and row.status == ref.status.name
    assert limit.limit_holds.isin([0, 1]).all() and (limit.limit_holds == 1).any()
    assert np.all(limit.limit_margin[limit.limit_holds == 1] > 0)


def test_steps_inf_refuses_the_logistic_loss_per_trial():
    table = relucore.sweep(
        {"n": 6, "d": 50, "steps": np.inf, "loss": "logistic", "minnorm": False, "gram_stats": False},
        trials=2,
        rng=0,
        progress=False,
    )
    assert (table.status == "error").all() and table.error.str.contains("logistic").all()
