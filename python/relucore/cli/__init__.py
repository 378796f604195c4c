"""The ``relucore`` command line: ``demo``, ``reproduce`` and ``sweep`` (see :mod:`relucore.cli.app`)."""

from relucore.cli.app import SUBCOMMANDS, main

__all__ = ["main", "SUBCOMMANDS"]
