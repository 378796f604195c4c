"""The trials of :func:`relucore.threshold` in a sweep store (:mod:`relucore.sweeps.store`).

The store's own tables are untouched (a threshold search opens it as a sweep with no
configurations, identity ``measure = "threshold:<outcome>"``); the trials go to one more table,
created when first needed (a store without it opens as before):

- ``threshold_trials(search, batch, idx, x, outcome)`` with ``PRIMARY KEY (search, batch, idx)``:
  ``search`` the SHA-256 of the search's settings and ``given`` combination (canonical JSON), ``x``
  the axis value the design gave the trial, ``outcome`` 0 or 1.

A resume recomputes the same design from the same trials, so a stored trial whose ``x`` differs
from the design's is a :class:`~relucore.CheckpointError`.
"""

from __future__ import annotations

import hashlib
from typing import Any, Dict, List, Tuple

from relucore._core import __version__
from relucore.sweeps.config import GENERATOR_VERSION, SWEEP_FORMAT, canonical_json
from relucore.sweeps.files import CheckpointError
from relucore.sweeps.store import Store

__all__ = ["ThresholdStore", "search_key"]

_TABLE_SQL = (
    "CREATE TABLE IF NOT EXISTS threshold_trials (search TEXT NOT NULL, batch INTEGER NOT NULL, "
    "idx INTEGER NOT NULL, x REAL NOT NULL, outcome INTEGER NOT NULL, PRIMARY KEY (search, batch, idx)) WITHOUT ROWID"
)


def search_key(settings: Dict[str, Any], combination: Dict[str, Any]) -> str:
    return hashlib.sha256(canonical_json({"settings": settings, "given": combination}).encode()).hexdigest()


class ThresholdStore:
    """The store at ``path`` opened for the searches ``keys`` (a list of ``search_key`` values)."""

    def __init__(self, path, entropy: int, outcome: str, keys: List[str]):
        identity = {
            "seed": str(entropy),
            "measure": f"threshold:{outcome}",
            "sweep_format": SWEEP_FORMAT,
            "generator": GENERATOR_VERSION,
        }
        self._store = Store(path, identity, [], 1, relucore_version=__version__)
        self.path = self._store.path
        self._keys = keys
        try:
            self._store._write(lambda: self._store.conn.execute(_TABLE_SQL))
            self.saved: List[Dict[Tuple[int, int], Tuple[float, bool]]] = [self._load(k) for k in keys]
        except BaseException:
            self.close()
            raise

    def _load(self, key: str) -> Dict[Tuple[int, int], Tuple[float, bool]]:
        rows = self._store.conn.execute("SELECT batch, idx, x, outcome FROM threshold_trials WHERE search = ?", (key,))
        return {(int(b), int(i)): (float(x), bool(o)) for b, i, x, o in rows.fetchall()}

    def lookup(self, search: int, batch: int, index: int, x: float):
        """The stored outcome of a trial (None when not stored); a different ``x`` raises."""
        hit = self.saved[search].get((batch, index))
        if hit is None:
            return None
        if hit[0] != x:
            raise CheckpointError(
                f"store {self.path!r}: trial {index} of batch {batch} was run at {hit[0]!r}, the design now "
                f"asks {x!r}; the search's settings or outcome changed: use another store path"
            )
        return hit[1]

    def save(self, search: int, batch: int, indices: List[int], xs: List[float], outcomes: List[bool]) -> None:
        """Commits one group of trials (one transaction)."""
        key = self._keys[search]
        rows = [(key, batch, int(i), float(x), int(o)) for i, x, o in zip(indices, xs, outcomes)]
        conn = self._store.conn
        self._store._write(
            lambda: conn.executemany(
                "INSERT OR IGNORE INTO threshold_trials (search, batch, idx, x, outcome) VALUES (?, ?, ?, ?, ?)", rows
            )
        )

    def close(self) -> None:
        self._store.close()
