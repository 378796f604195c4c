"""TrainOptions: the one list of options shared by train, Trainer and prepare."""

import dataclasses
import inspect

import numpy as np
import pytest

import relucore
from relucore.gd.options import TrainOptions
from relucore.gd.prepare import prepare


def test_every_option_is_in_each_signature_once():
    fields = [f.name for f in dataclasses.fields(TrainOptions)]
    for fn, excluded in ((relucore.train, ()), (relucore.Trainer, ("progress",))):  # Trainer refuses progress
        params = list(inspect.signature(fn).parameters)
        assert params[:3] == ["X", "y", "gram"]
        assert params[3:-1] == [f for f in fields if f not in excluded] and params[-1] == "options"
    assert "steps" not in inspect.signature(prepare).parameters


def test_options_object_and_keywords_give_the_same_run(problem):
    X, y = problem(3)
    kw = dict(signs=(1, -1), eta=0.5 / np.linalg.eigvalsh(X @ X.T)[-1], steps=500, record=5)
    a = relucore.train(X, y, **kw)
    b = relucore.train(X, y, options=TrainOptions(**kw))
    c = relucore.train(X, y, options=TrainOptions(signs=(1, -1), steps=7), steps=500, record=5, eta=kw["eta"])
    for r in (b, c):
        assert np.array_equal(r.W, a.W) and np.array_equal(r.history.beta, a.history.beta) and r.nit == a.nit
    t = relucore.Trainer(X, y, options=TrainOptions(signs=(1, -1), eta=kw["eta"]))
    assert np.array_equal(t.run(until=500).W, relucore.train(X, y, signs=(1, -1), eta=kw["eta"], steps=500).W)


def test_unknown_option_and_wrong_options_type_are_refused(problem):
    X, y = problem(0)
    with pytest.raises(TypeError, match="Trainer\\(\\) got an unexpected keyword argument 'singns'"):
        relucore.Trainer(X, y, singns=(1,))
    with pytest.raises(TypeError, match="options must be"):
        relucore.train(X, y, options=dict(signs=(1,)))
