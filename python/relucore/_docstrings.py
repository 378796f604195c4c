"""Docstring sections shared by several functions, written once.

:func:`shared_sections` fills each placeholder line ``{name}`` of a docstring with the
text of ``name``; the numpydoc sections keep their usual layout in ``help()`` and in the
API reference, and the wording lives in one place.
"""

from __future__ import annotations

import inspect
import textwrap

__all__ = ["shared_sections"]


def shared_sections(**sections: str):
    """Decorator: replaces each docstring line ``{name}`` by ``sections[name]``.

    Parameters
    ----------
    **sections : str
        The text of each placeholder, unindented (it takes the docstring's indentation).

    Returns
    -------
    callable
        The decorator; it returns the function (or class) itself with ``__doc__`` filled.
    """
    fill = {"{" + name + "}": textwrap.dedent(text).strip("\n") for name, text in sections.items()}

    def complete(obj):
        lines = inspect.cleandoc(obj.__doc__).split("\n")
        obj.__doc__ = "\n".join(fill.get(line.strip(), line) for line in lines)
        return obj

    return complete
