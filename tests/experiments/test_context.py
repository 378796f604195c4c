"""The registry hands every experiment a Context: quick, rng and progress are declared once there."""

import inspect

import pytest

from relucore import experiments
from relucore.experiments import _base

COMMON = ["quick", "rng", "progress"]


@pytest.fixture
def registry(monkeypatch):
    monkeypatch.setattr(_base, "_REGISTRY", dict(_base._REGISTRY))


@pytest.mark.parametrize("name", experiments.names())
def test_every_signature_lists_its_own_parameters_then_the_common_ones(name):
    params = inspect.signature(experiments.get(name)).parameters
    assert list(params)[-3:] == COMMON, name
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params.values())
    assert (params["quick"].default, params["rng"].default, params["progress"].default) == (False, 0, None)
    assert "ctx" not in params


def test_context_reaches_the_body_and_params_follow_the_signature(registry):
    seen = {}

    @_base.register("ctx-demo", "a context-taking experiment")
    def demo(ctx, *, b=2, a=1, unused=None):
        seen["ctx"] = ctx
        if ctx.quick:
            a = 10
        record = ctx.params(locals(), "rng", "quick", "b", extra="x", a=a * 100)
        return _base.ExperimentResult(ctx.name, record, [], [])

    res = demo(b=5, quick=True, rng=7, progress=False)
    ctx = seen["ctx"]
    assert (ctx.name, ctx.quick, ctx.rng, ctx.progress, ctx.own) == ("ctx-demo", True, 7, False, ("b", "a", "unused"))
    # Own parameters in signature order without those moved to the end, then the moved
    # names in the order given, an override in place, an added key last.
    assert list(res.params.items()) == [
        ("a", 1000),
        ("unused", None),
        ("rng", 7),
        ("quick", True),
        ("b", 5),
        ("extra", "x"),
    ]
    assert experiments.run("ctx-demo").params["rng"] == 0
    bar = ctx.bar(3, unit="stage")
    assert bar.disable  # progress=False; the label and counts: test_progress.py
    bar.close()
    with pytest.raises(TypeError, match="unexpected keyword argument 'c'"):
        demo(c=1)
    with pytest.raises(TypeError):
        demo(1)


def test_keyword_only_functions_are_registered_as_they_are(registry):
    def plain(*, quick=False, rng=0, progress=None):
        return _base.ExperimentResult("plain", {"rng": rng}, [], [])

    assert _base.register("plain-demo", "keyword-only")(plain) is plain
    assert experiments.run("plain-demo", rng=3).params == {"rng": 3}


def test_meanfield_experiments_take_steps_only():
    f = experiments.get("meanfield-1d")
    with pytest.raises(TypeError, match="unexpected keyword argument 'iters'"):
        f(iters=10)


def test_the_0x_seed_keyword_and_option_are_refused_with_their_new_names(capsys):
    """1.0 names the experiments' base seed rng, as everywhere else (relucore._renamed)."""
    with pytest.raises(TypeError, match="experiments.run\\(\\) got the 0.x keyword seed=, which 1.0 renamed: use rng="):
        experiments.run("fig4", quick=True, seed=1)
    from relucore.cli import main

    for cmd in (["demo", "--seed", "1"], ["reproduce", "fig4", "--seed", "1"]):
        with pytest.raises(SystemExit) as exit_info:
            main(cmd)
        assert exit_info.value.code == 2
        assert "--seed was renamed in 1.0: use --rng" in capsys.readouterr().err
