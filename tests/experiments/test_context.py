"""The registry hands every experiment a Context: quick, seed and progress are declared once there."""

import inspect

import pytest

from relucore import experiments
from relucore.experiments import _base

COMMON = ["quick", "seed", "progress"]


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(_base, "_REGISTRY", dict(_base._REGISTRY))


@pytest.mark.parametrize("name", experiments.names())
def test_every_signature_lists_its_own_parameters_then_the_common_ones(name):
    params = inspect.signature(experiments.get(name)).parameters
    assert list(params)[-3:] == COMMON, name
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
    assert (params["quick"].default, params["seed"].default, params["progress"].default) == (False, 0, None)
    assert "ctx" not in params


def test_context_reaches_the_body_and_params_follow_the_signature(registry):
    seen = {}

    @_base.register("ctx-demo", "a context-taking experiment")
    def demo(ctx, *, b=2, a=1, unused=None):
        seen["ctx"] = ctx
        if ctx.quick:
            a = 10
        record = ctx.params(locals(), "seed", "quick", "b", extra="x", a=a * 100)
        return _base.ExperimentResult(ctx.name, record, [], [])

    res = demo(b=5, quick=True, seed=7, progress=False)
    ctx = seen["ctx"]
    assert (ctx.name, ctx.quick, ctx.seed, ctx.progress, ctx.own) == ("ctx-demo", True, 7, False, ("b", "a", "unused"))
    # Own parameters in signature order without those moved to the end, then the moved
    # names in the order given, an override in place, an added key last.
    assert list(res.params.items()) == [
        ("a", 1000),
        ("unused", None),
        ("seed", 7),
        ("quick", True),
        ("b", 5),
        ("extra", "x"),
    ]
    assert experiments.run("ctx-demo").params["seed"] == 0
    bar = ctx.bar(3, unit="stage")
    assert bar.disable  # progress=False; the label and counts: test_progress.py
    bar.close()
    with pytest.raises(TypeError, match="unexpected keyword argument 'c'"):
        demo(c=1)
    with pytest.raises(TypeError):
        demo(1)


def test_keyword_only_functions_are_registered_as_they_are(registry):
    def plain(*, quick=False, seed=0, progress=None):
        return _base.ExperimentResult("plain", {"seed": seed}, [], [])

    assert _base.register("plain-demo", "keyword-only")(plain) is plain
    assert experiments.run("plain-demo", seed=3).params == {"seed": 3}


def test_meanfield_experiments_take_steps_only():
    f = experiments.get("meanfield-1d")
    with pytest.raises(TypeError, match="unexpected keyword argument 'iters'"):
        f(iters=10)
