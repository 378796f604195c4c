"""The gradient-descent front end: inits (:mod:`~relucore.gd.inits`), validation and
starting point (:mod:`~relucore.gd.train`: ``prepare``), ``train`` and ``run_prepared``,
:class:`~relucore.gd.trainer.Trainer` and the result classes (:mod:`~relucore.gd.results`).

Layer: above :mod:`relucore._core` (the C++ engines) and :mod:`relucore._validation`;
below :mod:`relucore.theory`, :mod:`relucore.sweeps` and :mod:`relucore.experiments`.
The public names are re-exported by :mod:`relucore`; this package re-exports nothing,
so that ``relucore.gd.train`` is always the module.
"""
