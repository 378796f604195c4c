"""The keywords and configuration keys renamed before 1.0: one table, refused with the new name.

1.0 is the one announced break of names: an old keyword is not translated, it is refused with a
``TypeError`` that names its replacement (an old sweep or TOML key with a ``ValueError``), so that
a script written for 0.x stops at the first old name instead of running something else. The
CHANGELOG's migration table lists the same renames.
"""

from __future__ import annotations

import functools
from typing import Callable, Mapping

__all__ = [
    "RENAMED_KEYWORDS",
    "RENAMED_NAMES",
    "RENAMED_FILE_KEYS",
    "RENAMED_CLI_OPTIONS",
    "removed_parameters",
    "refuse_renamed",
    "refuse_renamed_keys",
]

#: ``{function: {old keyword: new keyword}}`` for the public calls.
RENAMED_KEYWORDS = {
    "meanfield.train": {"N": "m", "M": "n", "step": "eta", "iters": "steps", "seed": "rng"},
    "sweep": {"seed": "rng", "batch_size": "chunk_size"},
    "minnorm": {"tol": "solver_tol"},
    "threshold": {"batch_size": "chunk_size"},
    "experiments.run": {"seed": "rng"},
    "meanfield.analyze": {"eps": "cluster_eps"},
}
#: ``{old attribute: new attribute}`` of the ``relucore`` namespace.
RENAMED_NAMES = {"theorem6_bound": "theorem6_bounds"}
#: ``{old key: new key}`` of the sweep TOML file (its grid keys: ``relucore.sweeps.config.RENAMED_KEYS``).
RENAMED_FILE_KEYS = {"seed": "rng", "batch_size": "chunk_size"}

#: ``{old option: new option}`` of the ``relucore`` command line (``relucore demo``, ``reproduce``).
RENAMED_CLI_OPTIONS = {"--seed": "--rng"}


def refuse_renamed(caller: str, names) -> None:
    """Raises the ``TypeError`` naming the new keyword when ``names`` holds a 0.x keyword of ``caller``."""
    renames = RENAMED_KEYWORDS.get(caller, {})
    for old in names:
        if old in renames:
            raise TypeError(f"{caller}() got the 0.x keyword {old}=, which 1.0 renamed: use {renames[old]}=")


def removed_parameters(caller: str) -> Callable:
    """Decorator: ``fn`` refuses the 0.x keywords of ``caller`` (:data:`RENAMED_KEYWORDS`) by their new names.

    The signature of ``fn`` is kept (``inspect.signature`` follows ``__wrapped__``).
    """
    renames = RENAMED_KEYWORDS[caller]

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if not renames.keys().isdisjoint(kwargs):
                refuse_renamed(caller, kwargs)
            return fn(*args, **kwargs)

        return wrapper

    return decorate


def refuse_renamed_keys(mapping: Mapping, where: str, renames: Mapping[str, str]) -> None:
    """Raises a ``ValueError`` naming the new key when ``mapping`` holds a 0.x key (``where``: "sweep grid", ...)."""
    for old, new in renames.items():
        if old in mapping:
            raise ValueError(f"the {where} key {old!r} was renamed in 1.0: use {new!r}")
