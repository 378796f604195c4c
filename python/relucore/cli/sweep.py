"""``relucore sweep CONFIG.toml``: run a sweep described in a TOML file.

The file holds the arguments of :func:`relucore.sweep`::

    trials = 20
    rng = 2026                   # the root seed (an int)
    output = "fig2.csv"          # optional, .csv or .parquet (relative to the file)
    checkpoint = "fig2.db"       # optional: the SQLite store, resumable
    chunk_size = 32              # optional: trials per task
    n_threads = 2                # optional

    [grid]                       # Cartesian product of the lists
    n = [10, 40]
    d = [1000, 10000, 100000]

or, instead of ``[grid]``, a list of configurations as ``[[configs]]`` tables.
Command-line options override the file.

Three more forms read a store (the SQLite database named by ``checkpoint``), also while sweeps
write to it::

    relucore sweep status STORE.db            # rows and errors per configuration, trials/s, ETA
    relucore sweep export STORE.db OUT.csv    # the saved rows as a table (.csv or .parquet)
    relucore sweep import OLD.ckpt NEW.db     # copy an old JSON-lines checkpoint into a store

Exit status: 0 when the sweep ran (failed trials are rows with status "error"); 2 on a
mistake in the command or its files (unreadable or invalid TOML, a bad key or value, a
store of another sweep, a damaged store, an old checkpoint to import first, a missing
store), reported in one line; 1, also in one line, when a file
cannot be written (a full disk, a missing folder); 130 after Ctrl-C, with one line saying how
many trials the store holds and that the same command resumes. Anything else is a bug and shows
its traceback.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
from typing import Any, Dict

from relucore._core import Status
from relucore._renamed import RENAMED_FILE_KEYS, refuse_renamed_keys

__all__ = ["add_arguments", "main", "load_config"]

FILE_KEYS = ("grid", "configs", "trials", "rng", "output", "checkpoint", "chunk_size", "n_threads")


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
    refuse_renamed_keys(cfg, "sweep file", RENAMED_FILE_KEYS)
    unknown = sorted(set(cfg) - set(FILE_KEYS))
    if unknown:
        raise ValueError(f"{path}: unknown key(s) {unknown}; expected some of {list(FILE_KEYS)}")
    if ("grid" in cfg) == ("configs" in cfg):
        raise ValueError(f"{path}: give exactly one of [grid] (a table of lists) or [[configs]] (a list of tables)")
    for k in ("trials", "rng"):
        if k not in cfg:
            raise ValueError(f"{path}: missing required key {k!r}")
    base = os.path.dirname(os.path.abspath(path))
    for k in ("output", "checkpoint"):
        if k in cfg:
            cfg[k] = os.path.join(base, cfg[k])
    return cfg


def add_arguments(p: argparse.ArgumentParser) -> None:
    """Declares the options of ``relucore sweep``."""
    p.add_argument(
        "config",
        help="TOML file with grid/configs, trials, rng, ... (see examples/sweep_fig2.toml); "
        "or status, export or import followed by their files",
    )
    p.add_argument("files", nargs="*", help="status STORE | export STORE OUT | import OLD NEW")
    p.add_argument("-o", "--output", help="write the table here (.csv, or .parquet with pyarrow)")
    p.add_argument("--checkpoint", help="the sweep's store, a SQLite file such as run.db (rerun to resume)")
    p.add_argument("--workers", type=int, help="run on N local worker processes (spawn), one thread each")
    p.add_argument("--dask", metavar="ADDRESS", help="run on a dask.distributed scheduler, e.g. tcp://host:8786")
    p.add_argument("--threads", type=int, dest="n_threads", help="threads (in-process) or OpenMP threads per batch")
    p.add_argument("--chunk-size", type=int, help="trials per task (one batched train call, one store commit)")
    p.add_argument("--batch-size", type=int, help=argparse.SUPPRESS)  # the 0.x name: refused naming --chunk-size
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def _summary(table) -> str:
    import pandas as pd

    keys = [c for c in ("n", "d", "m", "init", "use_gram") if table[c].nunique() > 1] or ["n"]
    g = table.groupby(keys, sort=True)
    # Each column names its statistic: means of the per-trial values, the largest pattern step.
    out = g.agg(**{
        "trials": ("trial", "size"),
        "errors": ("status", lambda s: int((s == Status.error.name).sum())),
        "mean loss": ("loss", "mean"),
        "mean gap": ("gap", "mean"),
        "mean gap_normalized": ("gap_normalized", "mean"),
        "max pattern_stable_step": ("pattern_stable_step", "max"),
    })  # fmt: skip
    with pd.option_context("display.width", 140, "display.max_columns", 20):
        return "per configuration, over its trials (errors excluded from the means):\n" + out.to_string()


class UsageError(Exception):
    """A mistake in the command or its files, reported in one line (exit status 2)."""


def _read(args: argparse.Namespace) -> Dict[str, Any]:
    """The file's arguments with the command line's overrides, all checked before anything runs."""
    from relucore.sweeps.api import check_arguments

    try:
        cfg = load_config(args.config)
    except OSError as exc:
        raise UsageError(f"cannot read {args.config}: {exc.strerror or exc}") from None
    except ValueError as exc:  # TOMLDecodeError is a ValueError
        raise UsageError(exc if str(exc).startswith(args.config) else f"{args.config}: {exc}") from None
    if args.batch_size is not None:
        raise UsageError("--batch-size was renamed in 1.0: use --chunk-size (trials per task)")
    if args.workers is not None and args.dask is not None:
        raise UsageError("give --workers or --dask, not both")
    if args.workers is not None and args.workers < 1:
        raise UsageError(f"--workers must be at least 1, got {args.workers}")
    run = {
        "grid": cfg["grid"] if "grid" in cfg else cfg["configs"],
        "trials": cfg["trials"],
        "rng": cfg["rng"],
        "n_threads": args.n_threads if args.n_threads is not None else cfg.get("n_threads"),
        "chunk_size": args.chunk_size if args.chunk_size is not None else cfg.get("chunk_size"),
        "checkpoint": args.checkpoint or cfg.get("checkpoint"),
    }
    try:
        check_arguments(**{k: run[k] for k in ("grid", "trials", "rng", "n_threads", "chunk_size")})
    except (ValueError, TypeError) as exc:
        raise UsageError(f"{args.config}: {exc}") from None
    output = args.output or cfg.get("output")
    if output and os.path.splitext(output)[1].lower() not in (".csv", ".parquet"):
        raise UsageError(f"the output must end in .csv or .parquet, got {output!r}")
    if output and output.lower().endswith(".parquet") and importlib.util.find_spec("pyarrow") is None:
        raise UsageError("writing .parquet needs pyarrow (pip install pyarrow); or write .csv")
    return dict(run, output=output)


def _sweep(args: argparse.Namespace, run: Dict[str, Any]):
    import relucore

    kw = {k: run[k] for k in ("trials", "rng", "n_threads", "chunk_size", "checkpoint")}
    kw["progress"] = not args.no_progress
    if args.dask is not None:
        try:
            from distributed import Client
        except ImportError:
            raise UsageError("--dask needs dask.distributed: pip install 'relucore[sweep]'") from None
        with Client(args.dask) as client:
            return relucore.sweep(run["grid"], executor=client.get_executor(), **kw)
    if args.workers is not None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        ex = ProcessPoolExecutor(
            args.workers, mp_context=multiprocessing.get_context("spawn"), initializer=_leave_interrupts_to_parent
        )
        try:
            table = relucore.sweep(run["grid"], executor=ex, **kw)
        except KeyboardInterrupt:
            ex.shutdown(wait=False, cancel_futures=True)
            raise
        ex.shutdown()
        return table
    return relucore.sweep(run["grid"], **kw)


def _leave_interrupts_to_parent() -> None:
    """Worker processes ignore Ctrl-C: the terminal sends it to the whole process group, and the
    parent alone reports it (one line) while the workers finish their current batch and exit."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _interrupted(run: Dict[str, Any]) -> str:
    """The one line printed on Ctrl-C: what is saved and how to resume."""
    store = run["checkpoint"]
    if not store:
        return 'relucore sweep: interrupted; nothing was saved (set checkpoint = "FILE.db" to make a sweep resumable)'
    from relucore.sweeps import store_read

    try:
        st = store_read.status(store)
        saved = f"{st.done} trials are saved in {store}, {st.remaining} to run"
    except Exception:  # noqa: BLE001 - the report must not raise; the store says more on resume
        saved = f"the trials committed so far are in {store}"
    return f"relucore sweep: interrupted; {saved}: run the same command again to resume"


#: Store commands: name -> number of files.
STORE_COMMANDS = {"status": 1, "export": 2, "import": 2}


def _store_command(args: argparse.Namespace) -> None:
    from relucore.sweeps import store_read
    from relucore.sweeps.table import save_table

    name, files = args.config, args.files
    if len(files) != STORE_COMMANDS[name]:
        usage = {"status": "STORE", "export": "STORE OUT.csv", "import": "OLD.ckpt NEW.db"}[name]
        raise UsageError(f"usage: relucore sweep {name} {usage}")
    if name == "status":
        print(store_read.status(files[0]))
    elif name == "export":
        if os.path.splitext(files[1])[1].lower() not in (".csv", ".parquet"):
            raise UsageError(f"the output must end in .csv or .parquet, got {files[1]!r}")
        table = store_read.read_table(files[0])
        save_table(table, files[1])
        print(f"wrote {len(table)} rows to {files[1]}", file=sys.stderr)
    else:
        counts = store_read.import_checkpoint(files[0], files[1])
        torn = f"; left out an unfinished last record ({counts['torn_bytes']} bytes)" if counts["torn_bytes"] else ""
        dup = counts["rows"] - counts["inserted"]
        dup_text = f"; {dup} rows were already in the store (identical)" if dup else ""
        print(f"imported {counts['inserted']} rows from {files[0]} into {files[1]}{dup_text}{torn}")


def main(args: argparse.Namespace) -> int:
    """Runs the ``sweep`` subcommand; returns the exit status (see the module's docstring)."""
    import relucore

    try:
        if args.config in STORE_COMMANDS:
            try:
                _store_command(args)
            except FileNotFoundError as exc:
                raise UsageError(f"{exc.filename}: no such file") from None
            except relucore.CheckpointError as exc:
                raise UsageError(exc) from None
            return 0
        if args.files:
            raise UsageError(f"unexpected argument(s) {args.files}: give one TOML file")
        run = _read(args)
        try:
            table = _sweep(args, run)
        except relucore.CheckpointError as exc:
            raise UsageError(exc) from None
        except KeyboardInterrupt:
            print(_interrupted(run), file=sys.stderr)
            return 130
        print(_summary(table))
        if run["output"]:
            relucore.save_table(table, run["output"])
            print(f"wrote {len(table)} rows to {run['output']}", file=sys.stderr)
    except UsageError as exc:
        print(f"relucore sweep: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        if exc.filename is None:  # not a file of the sweep's: a bug or a lost executor
            raise
        print(f"relucore sweep: error: {exc.filename}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    return 0
