"""TrainOptions: the one list of options shared by train, Trainer and prepare."""

import dataclasses
import inspect

import numpy as np
import pytest

import relucore
from relucore.gd.defaults import STEPS as STEPS_DEFAULT
from relucore.gd.options import TrainOptions
from relucore.gd.prepare import prepare


def test_every_option_is_in_each_signature_once():
    fields = [f.name for f in dataclasses.fields(TrainOptions)]
    for fn, excluded in ((relucore.train, ()), (relucore.Trainer, ("progress",))):  # Trainer refuses progress
        params = list(inspect.signature(fn).parameters)
        assert params[:3] == ["X", "y", "gram"]
        assert params[3:-1] == [f for f in fields if f not in excluded] and params[-1] == "options"
    assert "steps" not in inspect.signature(prepare).parameters


# flow declares the start and model options; the options of a GD run are refused (test_flow.py).
_FLOW_EXCLUDED = ("eta", "steps", "tol", "record", "engine", "n_threads", "on_divergence")


@pytest.mark.parametrize(
    "fn, excluded", [(relucore.train, ()), (relucore.Trainer, ("progress",)), (relucore.flow, _FLOW_EXCLUDED)]
)
def test_declared_options_are_the_fields_of_train_options(fn, excluded):
    """train, Trainer and flow declare each option they take as a keyword parameter (for help(), IDEs
    and type checkers) with TrainOptions' annotation and its very default object (the one home)."""
    params = inspect.signature(fn).parameters
    declared = [name for name in params if name in {f.name for f in dataclasses.fields(TrainOptions)}]
    fields = [f for f in dataclasses.fields(TrainOptions) if f.name not in excluded]
    assert declared == [f.name for f in fields]
    for f in fields:
        p = params[f.name]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY, f.name
        assert p.default is f.default, f.name
        assert p.annotation == f.type, (f.name, p.annotation, f.type)


def test_a_keyword_beside_options_overrides_it_unless_it_is_the_default_object(problem):
    X, y = problem(1)
    base = TrainOptions(signs=(1, -1), steps=50, tol=0.0)
    ref = relucore.train(X, y, options=base)
    assert relucore.train(X, y, options=base, steps=STEPS_DEFAULT).nit == ref.nit == 50  # the default object
    assert relucore.train(X, y, options=base, steps=20).nit == 20
    same = relucore.train(X, y, options=dataclasses.replace(base, steps=20))
    assert np.array_equal(relucore.train(X, y, options=base, steps=20).W, same.W)


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
    with pytest.raises(TypeError, match="Trainer.__init__\\(\\) got an unexpected keyword argument 'singns'"):
        relucore.Trainer(X, y, singns=(1,))
    with pytest.raises(TypeError, match="options must be"):
        relucore.train(X, y, options=dict(signs=(1,)))
