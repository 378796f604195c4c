"""Reading the JSON-lines checkpoints of relucore before the SQLite store (for import only).

Format (UTF-8 text, one JSON document per line):

- line 1, the header: ``{"format": "relucore-sweep", "version": 1,
  "fingerprint": <sha256 of the arguments>, "arguments": {"seed", "measure",
  "relucore", "configs": [every configuration the file has rows of]}}``;
- every further line, one finished batch: ``{"sha": <sha256 of rows>, "rows": [...]}``
  (``config_index`` numbering the header's ``configs``).

Such a file is never written or resumed any more: :func:`read_checkpoint` reads it whole so
that ``relucore sweep import OLD.ckpt NEW.db`` can copy its rows into a store. Every file of
this format was written with sweep format 1 (:data:`LEGACY_SWEEP_FORMAT`).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from relucore.sweeps.files import CheckpointError

__all__ = ["LEGACY_FORMAT", "LEGACY_SWEEP_FORMAT", "LegacyCheckpoint", "is_legacy", "read_checkpoint"]

LEGACY_FORMAT = "relucore-sweep"
#: The sweep format (generator and seeding) of every JSON-lines checkpoint: they predate its
#: versioning and were all written with the first one.
LEGACY_SWEEP_FORMAT = 1
_LEGACY_VERSION = 1


@dataclass
class LegacyCheckpoint:
    """What a JSON-lines checkpoint holds."""

    path: str
    arguments: Dict[str, Any]  #: seed, measure, relucore and configs, as in the header
    rows: List[Dict[str, Any]]  #: every row of every whole record, in file order
    torn_bytes: int  #: size of an unfinished last record that was left out (0: none)


def is_legacy(head: bytes) -> bool:
    """Whether a file starting with ``head`` is a JSON-lines checkpoint."""
    return head.lstrip().startswith(b"{") and f'"{LEGACY_FORMAT}"'.encode() in head


def _rows_of(line: bytes) -> Optional[List[Dict[str, Any]]]:
    try:
        rec = json.loads(line)
        rows_json = json.dumps(rec["rows"], sort_keys=True)
    except (ValueError, KeyError, TypeError):
        return None
    if rec.get("sha") != hashlib.sha256(rows_json.encode()).hexdigest():
        return None
    return rec["rows"]


def _header(path: str, line: bytes) -> Dict[str, Any]:
    try:
        header = json.loads(line)
    except ValueError as exc:
        raise CheckpointError(f"{path!r} is not a relucore sweep checkpoint (unreadable header: {exc})") from None
    if not isinstance(header, dict) or header.get("format") != LEGACY_FORMAT:
        raise CheckpointError(f"{path!r} is not a relucore sweep checkpoint")
    if header.get("version") != _LEGACY_VERSION:
        raise CheckpointError(f"checkpoint {path!r} has version {header.get('version')}, expected {_LEGACY_VERSION}")
    arguments = header.get("arguments")
    if not isinstance(arguments, dict) or not isinstance(arguments.get("configs"), list):
        raise CheckpointError(f"checkpoint {path!r} has a damaged header (no configurations)")
    return arguments


def read_checkpoint(path: str) -> LegacyCheckpoint:
    """Reads a JSON-lines checkpoint whole.

    An unfinished last record (no final newline: a writer killed mid-write) is left out and
    its size reported in ``torn_bytes``; any other damaged record raises
    :class:`~relucore.CheckpointError` naming the file and the record's line.
    """
    with open(path, "rb") as f:
        data = f.read()
    lines = data.split(b"\n")
    complete, tail = lines[:-1], lines[-1]
    if not complete:
        raise CheckpointError(f"checkpoint {path!r} has no complete header line")
    arguments = _header(path, complete[0])
    rows: List[Dict[str, Any]] = []
    for i, line in enumerate(complete[1:]):
        got = _rows_of(line)
        if got is None:
            raise CheckpointError(f"checkpoint {path!r}: record {i + 1} (line {i + 2}) is damaged")
        rows.extend(got)
    return LegacyCheckpoint(path, arguments, rows, len(tail))
