"""The one rule of ``progress=``: a tqdm bar on stderr, tqdm imported only when a bar is drawn."""

from __future__ import annotations

import sys
from typing import Optional

__all__ = ["progress_bar", "check_progress"]


def check_progress(progress) -> Optional[bool]:
    """``progress`` checked: None, True or False (a ``TypeError`` otherwise)."""
    if progress is None or isinstance(progress, bool):
        return progress
    if type(progress).__name__ == "bool_":  # numpy's bool
        return bool(progress)
    raise TypeError(f"progress must be None, True or False, got {type(progress).__name__}")


def progress_bar(progress: Optional[bool], total: int, desc: str, unit: str = "it", initial: int = 0):
    """A tqdm bar when ``progress`` is True (None: only when stderr is a terminal), else None."""
    progress = check_progress(progress)
    if progress is None:
        progress = sys.stderr.isatty()
    if not progress:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, unit=unit, desc=desc, leave=True)
