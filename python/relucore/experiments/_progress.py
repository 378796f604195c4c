"""Progress bars of the experiments (a leaf module: the runner and the experiments both use it)."""

from __future__ import annotations

import sys
from typing import Optional

__all__ = ["show_progress", "progress_bar"]


def show_progress(progress: Optional[bool]) -> bool:
    """Whether to draw progress bars: ``progress`` itself, or (None) only when stderr is a terminal."""
    return sys.stderr.isatty() if progress is None else bool(progress)


def progress_bar(progress: Optional[bool], desc: str, total: int, unit: str = "it"):
    """A tqdm bar over an experiment's units of work (seeds, configurations, stages).

    Drawn on stderr when :func:`show_progress` says so, otherwise a silent one;
    it is left off the screen when closed, so the runner's bar stays on top.
    """
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=not show_progress(progress), leave=False)
