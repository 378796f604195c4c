"""The defaults read from the C++ table (relucore/defaults.hpp, relucore/gd/model.hpp) against their stated values."""

import numpy as np
import pytest

import relucore
from relucore import _core
from relucore.gd import defaults


def test_constants_have_their_documented_values():
    assert (defaults.C_ALPHA, defaults.C_G, defaults.TOL_FACTOR, defaults.MAX_CONDITION) == (10.0, 2.0, 1e-12, 1e12)
    assert defaults.STEPS == 10_000 and defaults.LEAKY_SLOPE == 0.01
    assert defaults.DEFAULT_INIT_SCALE == float(np.sqrt(2e-6))  # Lai et al. 2026, Fig. 3: variance 2e-6
    assert defaults.LOSSES[:2] == ("square", "logistic")  # a new loss is appended to the table


def test_every_loss_of_the_table_is_documented():
    """The loss table (gd/model.hpp) is the one home of the losses: each row must be explained in
    docs/math.md (its value and dL/dh) and listed in the C++ reference; nothing else names them."""
    from pathlib import Path

    docs = Path(__file__).resolve().parents[2] / "docs"
    math, reference = (docs / "math.md").read_text(), (docs / "cpp_reference.md").read_text()
    for loss in defaults.LOSSES:
        assert loss.replace("_", " ") in math.lower() or f"`{loss}`" in math, loss
        assert f"`{loss}`" in reference, loss


def test_every_activation_of_the_table_is_documented_and_has_one_phi():
    """The activation table (gd/model.hpp) names the activations; each is explained in docs/math.md and
    listed in the C++ reference, and ``defaults.activate`` (the one Python phi) equals a reference
    written here (leaky: slope gamma below zero, zero counts as inactive)."""
    from pathlib import Path

    assert defaults.ACTIVATIONS[:2] == ("relu", "leaky_relu")  # a new activation is appended to the table
    docs = Path(__file__).resolve().parents[2] / "docs"
    math, reference = (docs / "math.md").read_text(), (docs / "cpp_reference.md").read_text()
    for name in defaults.ACTIVATIONS:
        assert f"`{name}`" in math or name.replace("_", " ") in math.lower(), name
        assert f"`{name}`" in reference, name
    beta = np.array([[-2.0, -0.0, 0.0, 1e-300, 3.5]])
    np.testing.assert_array_equal(defaults.activate(beta, "relu"), [[0.0, 0.0, 0.0, 1e-300, 3.5]])
    np.testing.assert_array_equal(defaults.activate(beta, "leaky_relu", 0.25), [[-0.5, -0.0, 0.0, 1e-300, 3.5]])


@pytest.mark.parametrize("n", [1, 7, 1000])
def test_default_step_is_one_over_curvature_times_s2_mu1(n):
    mu1 = np.array([3.7, 0.25])
    signs = (1.0, -0.5)
    s2 = 1.25
    assert np.array_equal(defaults.default_eta(mu1, signs, "square", n), 1.0 / (1.0 * s2 * mu1))
    assert np.array_equal(defaults.default_eta(mu1, signs, "logistic", n), 1.0 / (1.0 / (4.0 * n) * s2 * mu1))


def test_default_tolerance_is_relative_for_square_and_zero_for_logistic():
    y = np.array([[3.0, 4.0]])
    mu1 = np.array([4.0])
    assert defaults.default_tol(mu1, y, "square")[0] == 1e-12 * 2.0 * 5.0
    assert defaults.default_tol(mu1, y, "logistic")[0] == 0.0
    assert defaults.default_tol(mu1, np.zeros((1, 2)), "square")[0] == np.finfo(float).tiny


def test_the_loss_table_drives_label_checks_in_train_and_trainer(problem):
    X, y = problem(1)
    assert _core.loss_traits(_core.Loss.logistic).labels_pm1
    with pytest.raises(ValueError, match="loss='logistic' needs labels in"):
        relucore.train(X, y, loss="logistic")
    t = relucore.Trainer(X, np.sign(y), loss="logistic")
    with pytest.raises(ValueError, match="loss='logistic' needs labels in"):
        t.set_labels(y)
    t.set_labels(-np.sign(y))


@pytest.mark.parametrize("loss", list(_core.Loss))
def test_loss_traits_is_the_bound_row(loss):
    """``_core.loss_traits`` returns the table's row as a read-only bound class, whose flags drive the
    Python rules (default tol and label checks)."""
    t = _core.loss_traits(loss)
    assert type(t) is _core.LossTraits and t.loss == loss and t.name == loss.name
    assert t.relative_tol == (loss == _core.Loss.square) and t.labels_pm1 == (loss == _core.Loss.logistic)
    assert t.per_example == (loss == _core.Loss.logistic) and t.curvature_denominator > 0
    assert defaults.loss_traits(loss.name) is defaults.loss_traits(loss.name)
    with pytest.raises(AttributeError):
        t.relative_tol = not t.relative_tol
