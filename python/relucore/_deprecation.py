"""Renamed keyword arguments: the one place that keeps an old name working for a release.

``@renamed_parameters(step="eta", iters="steps")`` lets callers still pass the old names:
each gives a :class:`DeprecationWarning` that names the new one, and passing both is a
``TypeError``. The wrapped function's signature shows only the new names.
"""

from __future__ import annotations

import functools
import warnings
from typing import Callable

__all__ = ["renamed_parameters", "renamed_key", "REMOVAL"]

#: The release in which the old names stop working.
REMOVAL = "0.3"


def renamed_parameters(**renames: str) -> Callable:
    """Decorator: ``old=new`` pairs of keyword arguments renamed for one release."""

    def decorate(fn):
        qualname = f"{fn.__module__.replace('relucore._', 'relucore.').split('._')[0]}.{fn.__name__}"

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            for old, new in renames.items():
                if old in kwargs:
                    if new in kwargs:
                        raise TypeError(f"{fn.__name__}() got both {old}= and its new name {new}=; pass only {new}=")
                    warnings.warn(
                        f"{qualname}({old}=...) is deprecated and will be removed in {REMOVAL}: use {new}= instead",
                        DeprecationWarning,
                        stacklevel=2,
                    )
                    kwargs[new] = kwargs.pop(old)
            return fn(*args, **kwargs)

        wrapper.renamed_parameters = dict(renames)
        return wrapper

    return decorate


def renamed_key(mapping, old: str, new: str, where: str, stacklevel: int = 3) -> dict:
    """A copy of ``mapping`` (a configuration dict) with the key ``old`` renamed ``new``.

    Gives the :class:`DeprecationWarning` of :func:`renamed_parameters`, naming the new key;
    both keys given is a ``TypeError``. A mapping without ``old`` is returned as a copy.
    """
    out = dict(mapping)
    if old not in out:
        return out
    if new in out:
        raise TypeError(f"{where} has both {old!r} and its new name {new!r}; give only {new!r}")
    warnings.warn(
        f"the {where} key {old!r} is deprecated and will be removed in {REMOVAL}: use {new!r} instead",
        DeprecationWarning,
        stacklevel=stacklevel,
    )
    out[new] = out.pop(old)
    return out
