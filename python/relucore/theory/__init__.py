"""The theory toolkit: each module implements results of the papers (docs/math.md states them).

- :mod:`~relucore.theory.sampling`: data and Gram matrices (Wishart / Bartlett) for any d;
- :mod:`~relucore.theory.gram_stats`: Gram concentration;
- :mod:`~relucore.theory.limits`: the closed-form GD limits and ``check_limit``;
- :mod:`~relucore.theory.bounds`: the gap bounds and step constants;
- :mod:`~relucore.theory.regimes`: activation regimes of a recorded run;
- :mod:`~relucore.theory.flow`: exact gradient flow, event to event (certified GD limits: ``relucore.gd.limit``);
- :mod:`~relucore.theory.metrics`: stable rank and normalised margins;
- :mod:`~relucore.theory.minnorm`: exact minimum-norm solutions with certificates.

The public names are re-exported by :mod:`relucore`; this package re-exports nothing,
so that ``relucore.theory.minnorm`` is always the module.
"""
