"""Hypothesis strategies and the data the property tests of this folder share (needs hypothesis)."""

from _problems import fig4_problem as problem  # Gaussian X (n, d), |y| ~ U(0.1, 1) with random signs
from hypothesis import strategies as st

__all__ = ["problem", "seeds", "power_of_two_rescalings"]

#: Seeds of ``np.random.default_rng``.
seeds = st.integers(0, 2**32 - 1)


def power_of_two_rescalings(max_n: int, max_k: int, signs) -> dict:
    """Strategies of a problem (seed, 2 <= n <= max_n, signs) and the exponents kc, kl of ``X -> 2^kc X``,
    ``y -> 2^kl y`` with ``|kc|, |kl| <= max_k``: keyword arguments of ``@given``."""
    return dict(
        seed=seeds,
        n=st.integers(2, max_n),
        signs=st.sampled_from(signs),
        kc=st.integers(-max_k, max_k),
        kl=st.integers(-max_k, max_k),
    )
