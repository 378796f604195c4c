"""Module-level outcomes for the tests of relucore.threshold (picklable: process and Dask executors)."""

import math

#: The synthetic outcome's crossing of 1/2, its steepness in log n and its dependence on d.
N_HALF = 50.0
STEEPNESS = 4.0


def falling(params, rng):
    """Bernoulli with P(n) = 1 / (1 + (n / n_half)^k): crosses 1/2 at n_half, ``N_HALF * d / 10`` with a ``d``."""
    n_half = N_HALF * params.get("d", 10) / 10
    return bool(rng.random() < 1.0 / (1.0 + (params["n"] / n_half) ** STEEPNESS))


def rising_probit(params, rng):
    """Bernoulli with P(x) = 0.1 + 0.8 Phi(3 (x - 1)) on a real axis: crosses 0.5 at x = 1."""
    return bool(rng.random() < 0.1 + 0.8 * 0.5 * (1 + math.erf(3.0 * (params["x"] - 1.0) / math.sqrt(2))))


def always(params, rng):
    """P = 0.9 everywhere: never crosses 1/2."""
    return bool(rng.random() < 0.9)


def bump(params, rng):
    """P high in the middle of (5, 200) and low at both ends: not monotone."""
    return bool(rng.random() < (0.95 if 20 <= params["n"] <= 60 else 0.05))


CALLS = {"n": 0, "stop_after": None}


def interrupted(params, rng):
    """``falling``, raising KeyboardInterrupt after ``CALLS["stop_after"]`` calls (counted in ``CALLS["n"]``)."""
    CALLS["n"] += 1
    if CALLS["stop_after"] is not None and CALLS["n"] > CALLS["stop_after"]:
        raise KeyboardInterrupt
    return falling(params, rng)
