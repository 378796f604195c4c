"""``relucore sweep CONFIG.toml``: run a sweep described in a TOML file.

The file holds the arguments of :func:`relucore.sweep`::

    trials = 20
    seed = 2026
    output = "fig2.csv"          # optional, .csv or .parquet (relative to the file)
    checkpoint = "fig2.ckpt"     # optional: resumable
    batch_size = 32              # optional
    n_threads = 2                # optional

    [grid]                       # Cartesian product of the lists
    n = [10, 40]
    d = [1000, 10000, 100000]

or, instead of ``[grid]``, a list of configurations as ``[[configs]]`` tables.
Command-line options override the file.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Dict

__all__ = ["add_arguments", "main", "load_config"]

FILE_KEYS = ("grid", "configs", "trials", "seed", "output", "checkpoint", "batch_size", "n_threads")


def _load_toml(path: str) -> Dict[str, Any]:
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        try:
            import tomli as tomllib
        except ImportError:
            raise SystemExit("relucore sweep: reading TOML needs Python >= 3.11 or the tomli package") from None
    with open(path, "rb") as f:
        return tomllib.load(f)


def load_config(path: str) -> Dict[str, Any]:
    """Reads and checks a sweep TOML file; relative paths are resolved against its folder."""
    cfg = _load_toml(path)
    unknown = sorted(set(cfg) - set(FILE_KEYS))
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {unknown}; expected some of {list(FILE_KEYS)}")
    if ("grid" in cfg) == ("configs" in cfg):
        raise ValueError(f"{path}: give exactly one of [grid] (a table of lists) or [[configs]] (a list of tables)")
    for k in ("trials", "seed"):
        if k not in cfg:
            raise ValueError(f"{path}: missing required key {k!r}")
    base = os.path.dirname(os.path.abspath(path))
    for k in ("output", "checkpoint"):
        if k in cfg:
            cfg[k] = os.path.join(base, cfg[k])
    return cfg


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declares the options of ``relucore sweep``."""
    p.add_argument("config", help="TOML file with grid/configs, trials, seed, ... (see examples/sweep_fig2.toml)")
    p.add_argument("-o", "--output", help="write the table here (.csv, or .parquet with pyarrow)")
    p.add_argument("--checkpoint", help="append-only checkpoint file (rerun the same command to resume)")
    p.add_argument("--workers", type=int, help="run on N local worker processes (spawn), one thread each")
    p.add_argument("--dask", metavar="ADDRESS", help="run on a dask.distributed scheduler, e.g. tcp://host:8786")
    p.add_argument("--threads", type=int, dest="n_threads", help="threads (in-process) or OpenMP threads per batch")
    p.add_argument("--batch-size", type=int, help="trials per batch")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _summary(table) -> str:
    import pandas as pd

    keys = [c for c in ("n", "d", "m", "init", "use_gram") if table[c].nunique() > 1] or ["n"]
    g = table.groupby(keys, sort=True)
    out = g.agg(trials=("trial", "size"), errors=("status", lambda s: int((s == "error").sum())),
                loss=("loss", "mean"), gap=("gap", "mean"), gap_normalised=("gap_normalised", "mean"),
                pattern_stable_step=("pattern_stable_step", "max"))
    with pd.option_context("display.width", 120, "display.max_columns", 20):
        return out.to_string()


def main(args: argparse.Namespace) -> int:
    """Runs the ``sweep`` subcommand."""
    import relucore

    cfg = load_config(args.config)
    output = args.output or cfg.get("output")
    checkpoint = args.checkpoint or cfg.get("checkpoint")
    n_threads = args.n_threads if args.n_threads is not None else cfg.get("n_threads")
    batch_size = args.batch_size if args.batch_size is not None else cfg.get("batch_size")
    grid = cfg["grid"] if "grid" in cfg else cfg["configs"]
    if args.workers is not None and args.dask is not None:
        raise SystemExit("relucore sweep: give --workers or --dask, not both")
    kw = dict(trials=cfg["trials"], seed=cfg["seed"], n_threads=n_threads, batch_size=batch_size,
              checkpoint=checkpoint, progress=not args.no_progress)
    if args.dask is not None:
        from distributed import Client

        with Client(args.dask) as client:
            table = relucore.sweep(grid, executor=client.get_executor(), **kw)
    elif args.workers is not None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.workers, mp_context=multiprocessing.get_context("spawn")) as ex:
            table = relucore.sweep(grid, executor=ex, **kw)
    else:
        table = relucore.sweep(grid, **kw)
    print(_summary(table))
    if output:
        relucore.save_table(table, output)
        print(f"wrote {len(table)} rows to {output}", file=sys.stderr)
    return 0
