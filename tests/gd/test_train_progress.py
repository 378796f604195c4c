"""train(progress=): a bar of the steps that leaves every result bit unchanged; refused where it cannot work."""

import numpy as np
import pytest

import relucore
import relucore.gd.train as train_module


class _Bar:
    """Stands in for tqdm: records the updates the engines' step counts give."""

    def __init__(self, total):
        self.total, self.n, self.updates, self.closed = total, 0, [], False

    def update(self, k):
        self.n += k
        self.updates.append(k)

    def close(self):
        self.closed = True


@pytest.fixture
def bars(monkeypatch):
    made = []

    def fake(progress, total, desc, unit="it", initial=0):
        assert progress is True and desc == "train" and unit == "step"
        made.append(_Bar(total))
        return made[-1]

    monkeypatch.setattr(train_module, "progress_bar", fake)
    return made


@pytest.mark.parametrize("engine", ["dual", "weights"])
def test_progress_counts_every_step_and_changes_no_bit(bars, engine):
    rng = np.random.default_rng(0)
    X = rng.standard_normal((3, 8, 40))
    y = rng.uniform(0.1, 1, (3, 8)) * rng.choice([-1, 1], (3, 8))
    kw = dict(signs=(1, -1), steps=5000, tol=0.0, engine=engine, record=700)
    plain = relucore.train(X, y, **kw)
    shown = relucore.train(X, y, progress=True, **kw)
    for name in ("W", "alpha", "beta", "loss", "grad_norm", "nit", "status"):
        np.testing.assert_array_equal(getattr(shown, name), getattr(plain, name))
    np.testing.assert_array_equal(shown.history.loss, plain.history.loss)
    (bar,) = bars
    assert bar.total == 3 * 5000 and bar.n == int(np.sum(plain.nit)) == 15000 and bar.closed
    assert len(bar.updates) >= 1 and all(k >= 0 for k in bar.updates)


def test_progress_of_runs_that_stop_early_ends_at_their_steps(bars):
    ds = relucore.sample(6, 200, rng=1)
    res = relucore.train(ds.X, ds.y, signs=(1, -1), steps=100_000, progress=True)
    assert res.success and res.nit < 100_000
    assert bars[0].n == res.nit and bars[0].total == 100_000


def test_a_real_bar_on_stderr(capsys):
    pytest.importorskip("tqdm")
    ds = relucore.sample(5, 30, rng=2)
    relucore.train(ds.X, ds.y, steps=3000, tol=0.0, progress=True)
    err = capsys.readouterr().err
    assert "train" in err and "3000/3000" in err


def test_progress_is_refused_where_it_cannot_work():
    ds = relucore.sample(5, 30, rng=2)
    with pytest.raises(ValueError, match="progress is for finite runs"):
        relucore.train(ds.X, ds.y, steps=np.inf, progress=True)
    with pytest.raises(TypeError, match="unexpected keyword argument 'progress'"):  # not declared
        relucore.Trainer(ds.X, ds.y, progress=True)
    with pytest.raises(TypeError, match="Trainer\\(\\) got progress="):  # nor taken from options
        relucore.Trainer(ds.X, ds.y, options=relucore.TrainOptions(progress=True))
    with pytest.raises(TypeError, match="progress must be None, True or False"):
        relucore.train(ds.X, ds.y, steps=10, progress="yes")


def test_flow_progress_counts_its_events_and_changes_nothing(monkeypatch):
    made = []

    def fake(progress, total, desc, unit="it", initial=0):
        assert progress is True and desc == "flow" and unit == "event" and total is None
        made.append(_Bar(total))
        return made[-1]

    monkeypatch.setattr(relucore.theory.flow, "progress_bar", fake)
    ds = relucore.sample(10, 40, rng=4)
    plain = relucore.flow(ds.X, ds.y, signs=(1, -1))
    shown = relucore.flow(ds.X, ds.y, signs=(1, -1), progress=True)
    # The flow reaches its limit (which leaves an example unfit here: stalled) on both calls.
    assert plain.status == shown.status == relucore.Status.stalled and plain.event_times.size > 0
    np.testing.assert_array_equal(shown.W, plain.W)
    np.testing.assert_array_equal(shown.event_times, plain.event_times)
    (bar,) = made
    assert bar.n == plain.event_times.size and bar.closed


@pytest.fixture
def trainer_bars(monkeypatch):
    import relucore.gd.trainer as trainer_module

    made = []

    def fake(progress, total, desc, unit="it", initial=0):
        if progress is False:
            return None
        assert progress is True and desc == "Trainer.run" and unit == "step"
        made.append(_Bar(total))
        return made[-1]

    monkeypatch.setattr(trainer_module, "progress_bar", fake)
    return made


def test_trainer_run_progress_counts_its_steps_and_changes_no_bit(trainer_bars):
    """Trainer.run(progress=True): a bar of the steps up to ``until``, with and without a callback;
    the state and result are bitwise those of the same run without a bar."""
    ds = relucore.sample(8, 300, rng=3)
    kw = dict(signs=(1, -1), tol=0.0)

    def run(progress, callback=None, every=1):
        t = relucore.Trainer(ds.X, ds.y, **kw)
        t.step(7)  # the bar counts from the trainer's step count, not from 0
        return t.run(until=5000, progress=progress, callback=callback, every=every)

    plain, shown = run(False), run(True)
    for name in ("W", "alpha", "beta", "loss", "grad_norm", "nit", "status"):
        np.testing.assert_array_equal(getattr(shown, name), getattr(plain, name))
    bar = trainer_bars[-1]
    assert bar.total == 5000 - 7 and bar.n == 5000 - 7 and bar.closed and len(bar.updates) >= 4  # every 1024
    seen = []
    with_cb = run(True, callback=lambda t: seen.append(t.nit), every=500)
    np.testing.assert_array_equal(with_cb.W, plain.W)
    assert trainer_bars[-1].n == 5000 - 7 and seen == list(range(500, 5001, 500))  # the callback keeps its period
