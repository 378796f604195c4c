"""Seeded, resumable sweeps of many trials (in-process threads, processes or Dask).

- :mod:`~relucore.sweeps.config`: grids, keys and per-trial seeds;
- :mod:`~relucore.sweeps.columns`: every column of the table (name, dtype, meaning, source);
- :mod:`~relucore.sweeps.gram_columns`: the ``gram_*`` columns (both paths);
- :mod:`~relucore.sweeps.task`: one batch of trials (the general path);
- :mod:`~relucore.sweeps.gram_trial`: whole Gram-mode trials in one C++ call;
- :mod:`~relucore.sweeps.table`: the table;
- :mod:`~relucore.sweeps.row_data`: a row's data (X or K, y, init) drawn again from the row;
- :mod:`~relucore.sweeps.store`: the store (a SQLite database) a sweep checkpoints to;
- :mod:`~relucore.sweeps.store_read`: reading a store (table, status, old checkpoints);
- :mod:`~relucore.sweeps.api`: :func:`~relucore.sweep` itself;
- :mod:`~relucore.sweeps.threshold`: :func:`~relucore.threshold` (where a probability crosses p), with
  :mod:`~relucore.sweeps.threshold_search`, :mod:`~relucore.sweeps.threshold_fit`,
  :mod:`~relucore.sweeps.threshold_outcomes` and :mod:`~relucore.sweeps.threshold_store`.

The public names are re-exported by :mod:`relucore`.
"""

from relucore.sweeps.row_data import RowData, row_config, row_data  # noqa: E402

__all__ = ["RowData", "row_config", "row_data"]
