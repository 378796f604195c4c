"""``relucore.sweep``: Monte-Carlo sweeps over configurations x trials, batched and resumable."""

from __future__ import annotations

import concurrent.futures as cf
import functools
import os
from typing import Any, Callable, Dict, List, Optional, Tuple

import numpy as np

from relucore._core import __version__
from relucore._progress import progress_bar
from relucore._renamed import removed_parameters
from relucore._validation import check_int, check_n_threads
from relucore.sweeps.config import GENERATOR_VERSION, SWEEP_FORMAT, config_key, expand_grid, root_entropy
from relucore.sweeps.gram_trial import fast_trials_ok
from relucore.sweeps.store import CheckpointError, Store
from relucore.sweeps.table import Results, save_table
from relucore.sweeps.task import batch_size_of, run_batch

__all__ = [
    "sweep",
    "check_arguments",
    "check_executor",
    "check_picklable",
    "needs_pickling",
    "save_table",
    "CheckpointError",
    "default_chunk_size",
]

#: Upper bound on the trials of one batch (one task, one checkpoint record).
MAX_BATCH = 64
#: Upper bound on the trials of one batch that runs whole in C++ (the Gram-mode fast path):
#: larger batches amortise the Python around the call over trials that are each cheap.
FAST_MAX_BATCH = 1024
#: Smallest batch at the end of a sweep on a thread pool (see :func:`batch_bounds`).
TAIL_BATCH = 64
#: Memory budget of one batch's data (X, W, W0) in bytes.
BATCH_BYTES = 256 * 2**20


def default_chunk_size(cfg: Dict[str, Any], share: Optional[int] = None, fast: bool = False) -> int:
    """Trials per chunk (one batched task): up to ``MAX_BATCH`` (``FAST_MAX_BATCH`` for trials that run
    whole in C++, ``fast``), at most ~256 MiB of X and weights, and at most ``share`` (a
    thread's share of the trials, so that every thread gets work)."""
    n, d, m = cfg["n"], cfg["d"], len(cfg["signs"])
    per_trial = 8 * (n * n + 4 * m * n) if cfg["use_gram"] else 8 * (n * d + 2 * m * d + n * n)
    top = FAST_MAX_BATCH if fast else MAX_BATCH
    cap = top if share is None else max(1, min(top, share))
    return int(max(1, min(cap, BATCH_BYTES // max(per_trial, 1))))


def _callable_name(fn) -> Optional[str]:
    if fn is None:
        return None
    return f"{getattr(fn, '__module__', '?')}.{getattr(fn, '__qualname__', type(fn).__name__)}"


def _progress_bar(progress, total: int, initial: int, desc: str = "sweep"):
    return progress_bar(progress, total, desc, "trial", initial)


@removed_parameters("sweep")
def sweep(
    grid,
    *,
    trials: int,
    rng,
    measure: Optional[Callable] = None,
    executor: Optional[cf.Executor] = None,
    n_threads: Optional[int] = None,
    chunk_size: Optional[int] = None,
    checkpoint=None,
    progress: Optional[bool] = None,
):
    """Runs every configuration of ``grid`` ``trials`` times: one table row per trial.

    Each trial samples a data set (``relucore.sample``, or with ``use_gram=True``
    K without X at a cost independent of d, Lai et al. 2026, App. A.1; see
    docs/theory.md), trains with :func:`relucore.train` and measures the final
    loss, the pattern-stabilisation step, the gap to the minimum-norm
    interpolator (Lai et al. 2026, Theorems 2, 4, 6) and Gram statistics.
    Trials of one configuration run in batches, one batched C++ call each.

    Parameters
    ----------
    grid : dict of lists, or list of dicts
        Configurations: a dict is expanded as a Cartesian product (key order,
        last key fastest); a list gives them one by one. Keys and defaults:
        ``relucore.sweeps.config.DEFAULTS`` (table in docs/sweeps.md).
    trials : int
        Trials per configuration.
    rng : int or numpy.random.SeedSequence
        Root seed (the ``rng`` of the other calls; a numpy Generator is refused with a
        ``TypeError``, since a sweep seeded by one could not be resumed). Trial ``t`` of a
        configuration ``c`` draws all its randomness from ``SeedSequence(rng, spawn_key=(*key(c),
        t))``, where ``key(c)`` hashes the configuration's content: adding, removing or
        reordering configurations or trials leaves every other row unchanged.
        The ``seed`` column prints that SeedSequence.
    measure : callable, optional
        ``measure(data, result) -> dict`` of scalars, called per trial with
        the sampled data set and the trial's single-problem
        :class:`~relucore.TrainResult`; its keys become extra columns. With a
        process or Dask executor it must be picklable (a module-level function).
    executor : concurrent.futures.Executor, optional
        Where batches run; None (default): in this process, no fork, no
        pickling. Any Executor works, e.g. a spawn ``ProcessPoolExecutor`` or
        ``dask.distributed.Client(...).get_executor()`` (see docs/sweeps.md).
    n_threads : int, optional
        In-process (``executor=None``): threads running batches side by side
        (default: all cores); sweeps where every configuration has ``use_gram``
        but not all are on the Gram-mode fast path run on one thread.
        With an executor: OpenMP threads of each batch's C++ calls (default 1).
        See docs/sweeps.md, "Batches and threads".
    chunk_size : int, optional
        Trials per chunk (one task, one batched train call, one checkpoint record; not the
        SGD mini-batch ``batch_size`` of :func:`relucore.meanfield.train`).
        Default :func:`~relucore.sweeps.api.default_chunk_size` (the last chunks of a sweep
        on the thread pool smaller). Results do not depend on it.
    checkpoint : str or os.PathLike, optional
        The sweep's store, a SQLite database (created when the path is new; ``.db`` by
        convention) that commits every finished batch; rerunning runs only the trials
        not yet saved, also with more ``trials`` or more configurations (the saved rows
        are reused), and several processes may run the same sweep on one store. One
        written with another ``rng``, ``measure`` or sweep format raises
        :class:`~relucore.CheckpointError`, as does a damaged database or an old JSON-lines
        checkpoint (import it: ``relucore sweep import OLD.ckpt NEW.db``). See
        docs/sweeps.md, "Stores and resuming".
    progress : bool, optional
        tqdm progress bar; default: only when stderr is a terminal.

    Returns
    -------
    pandas.DataFrame
        One row per trial sorted by ``(config_index, trial)``: ``config_index``,
        ``trial``, ``seed``, the configuration's keys (lists as JSON text),
        the measured columns (``loss``, ``gap``, ``gap_normalized``,
        ``gram_*``, ...; each defined, with its meaning, in
        :mod:`relucore.sweeps.columns`), the ``measure`` columns, ``status``
        (``converged``, ``max_steps``, ``diverged`` or ``error``) and
        ``error`` (the exception of a failed trial; the sweep goes on).
        The table is bitwise identical whatever ``n_threads``, ``chunk_size``,
        ``executor`` or the order in which batches finish.

    Examples
    --------
    >>> import relucore
    >>> table = relucore.sweep({"n": [5, 10], "d": [500]}, trials=3, rng=0, progress=False)
    >>> len(table), sorted(set(table["status"]))
    (6, ['converged'])
    """
    configs, trials, entropy, chunk_size = check_arguments(
        grid, trials=trials, rng=rng, measure=measure, executor=executor, n_threads=n_threads, chunk_size=chunk_size
    )
    fast, pool_threads, task_threads = _threads(configs, measure, executor, n_threads)

    results = Results(len(configs), trials, dense=True)
    store = None
    if checkpoint is not None:
        identity = {
            "seed": str(entropy),
            "measure": _callable_name(measure),
            "sweep_format": SWEEP_FORMAT,
            "generator": GENERATOR_VERSION,
        }
        store = Store(
            checkpoint, identity, configs, trials, on_columns=results.add_columns, relucore_version=__version__
        )
    try:
        tasks = _tasks(configs, results.done, entropy, measure, chunk_size, fast, pool_threads, task_threads)
        bar = _progress_bar(progress, len(configs) * trials, len(results))
        leading: Dict[str, Any] = {}

        def meanwhile():  # the table's columns that do not depend on the results
            leading.update(results.leading(configs, entropy))

        try:
            run_tasks(tasks, executor, pool_threads, functools.partial(_record, results, store, bar), meanwhile)
        finally:
            if bar is not None:
                bar.close()
    finally:
        if store is not None:
            store.close()
    return results.table(configs, entropy, leading or None)


def check_arguments(grid, *, trials, rng, measure=None, executor=None, n_threads=None, chunk_size=None):
    """Checks the arguments of :func:`~relucore.sweep` (``ValueError``/``TypeError`` on a bad one) without
    running anything; returns ``(configs, trials, entropy, chunk_size)`` normalised."""
    configs = expand_grid(grid)
    trials = check_int(trials, "trials", minimum=1)
    entropy = root_entropy(rng)
    if measure is not None and not callable(measure):
        raise TypeError(f"measure must be callable, got {type(measure).__name__}")
    check_executor(executor)
    check_picklable(measure, "measure", executor)
    if n_threads is not None:
        check_n_threads(n_threads)
    if chunk_size is not None:
        chunk_size = check_int(chunk_size, "chunk_size", minimum=1)
    return configs, trials, entropy, chunk_size


def check_executor(executor) -> None:
    """Refuses an ``executor`` that is not None and has no ``submit``."""
    if executor is not None and not callable(getattr(executor, "submit", None)):
        raise TypeError(f"executor must be a concurrent.futures.Executor (with .submit), got {type(executor).__name__}")


def needs_pickling(executor) -> bool:
    """Whether ``executor`` sends its tasks to other processes: a ``ProcessPoolExecutor`` or Dask's."""
    if isinstance(executor, cf.ProcessPoolExecutor):
        return True
    module = type(executor).__module__ or ""
    return module.split(".")[0] in ("distributed", "dask")


def check_picklable(fn, name: str, executor) -> None:
    """A ``TypeError`` naming ``name`` when ``fn`` must travel to another process and cannot."""
    if fn is None or not needs_pickling(executor):
        return
    import pickle

    try:
        pickle.dumps(fn)
    except Exception as exc:
        raise TypeError(
            f"{name} must be picklable (a module-level function) to run on a process or Dask executor; "
            f"{_callable_name(fn)} is not ({type(exc).__name__}: {exc}); define it at module level, or use "
            f"executor=None or a ThreadPoolExecutor"
        ) from None


def _record(results: Results, store: Optional[Store], bar, out: Dict[str, Any]) -> None:
    """Keeps one finished batch: in the store (handed to its writer thread first), in the results, on the bar."""
    if "rows" in out:
        if store is not None:
            store.submit_rows(out["rows"])
        results.add(out["rows"])
    else:
        if store is not None:
            store.submit_columns(out["columns"])
        results.add_columns(out["columns"], interned=True)
    if bar is not None:
        bar.update(batch_size_of(out))


def _threads(configs, measure, executor, n_threads) -> Tuple[List[bool], int, int]:
    """``(fast, pool_threads, task_threads)``: which configurations run whole in C++, the
    threads of the in-process pool (0: none) and the OpenMP threads of each batch.

    In-process with several threads, a thread pool runs whole batches side by side
    (sampling, the C++ calls and the QPs release the GIL), each batch on one OpenMP
    thread, so every stage of a trial is parallel, not only GD. That includes batches
    of the Gram-mode fast path (whole trials in one C++ call): one thread's C++ call
    overlaps another's row building. Other Gram-only trials are mostly GIL-holding
    Python around tiny kernels: side by side they only contend (measured 0.6x with 2
    threads), so they run one batch at a time on one thread; use worker processes to
    scale them.
    """
    if n_threads is None:
        n_threads_eff = 1 if executor is not None else (os.cpu_count() or 1)
    else:
        n_threads_eff = check_n_threads(n_threads)
    all_gram = all(bool(cfg.get("use_gram")) for cfg in configs)
    fast = [fast_trials_ok(cfg, measure) for cfg in configs]
    pooled = not all_gram or all(fast)
    pool_threads = n_threads_eff if executor is None and n_threads_eff > 1 and pooled else 0
    task_threads = 1 if (pool_threads or (all_gram and executor is None)) else n_threads_eff
    return fast, pool_threads, task_threads


def batch_bounds(count: int, size: int, threads: int = 0) -> List[Tuple[int, int]]:
    """``(start, stop)`` of the batches of ``count`` trials: ``size`` each, or with ``threads``
    > 1 (the end of a sweep on a pool) shrinking towards the end, to the trials left over the
    threads (guided scheduling) but not below ``TAIL_BATCH``, so that the threads finish at about
    the same time."""
    bounds, start = [], 0
    while start < count:
        step = size
        if threads > 1:
            step = max(min(size, -(-(count - start) // threads)), min(size, TAIL_BATCH))
        bounds.append((start, min(count, start + step)))
        start += step
    return bounds


def _tasks(configs, done, entropy, measure, chunk_size, fast, pool_threads, task_threads) -> List[Dict[str, Any]]:
    """The batches of the trials not yet ``done`` (configs x trials), as ``run_batch`` payloads;
    without a ``chunk_size``, the last configuration's batches shrink towards the end
    (:func:`batch_bounds`)."""
    tasks: List[Dict[str, Any]] = []
    last = max((ci for ci in range(len(configs)) if not done[ci].all()), default=-1)
    for ci, cfg in enumerate(configs):
        todo = np.flatnonzero(~done[ci]).tolist()
        bs = chunk_size or default_chunk_size(cfg, -(-len(todo) // max(pool_threads, 1)), fast[ci])
        key = config_key(cfg)
        tail = pool_threads if ci == last and chunk_size is None else 0
        for start, stop in batch_bounds(len(todo), bs, tail):
            tasks.append(
                {
                    "batch": len(tasks),
                    "config": cfg,
                    "config_index": ci,
                    "key": list(key),
                    "entropy": entropy,
                    "trials": todo[start:stop],
                    "n_threads": task_threads,
                    "measure": measure,
                    "fast": fast[ci],
                }
            )
    return tasks


def run_tasks(
    tasks,
    executor,
    pool_threads: int,
    record: Callable,
    meanwhile: Optional[Callable] = None,
    fn: Optional[Callable] = None,
) -> None:
    """Runs ``fn(task)`` (default :func:`~relucore.sweeps.task.run_batch`, looked up when called) for
    each task (here, on an own pool of ``pool_threads`` threads, or on ``executor``) and hands each
    result to ``record`` as it finishes; ``meanwhile()`` runs once, while the pool or executor works
    (after the tasks when they run here)."""
    fn = run_batch if fn is None else fn
    own_pool = cf.ThreadPoolExecutor(pool_threads, thread_name_prefix="relucore-sweep") if pool_threads else None
    if own_pool is not None:
        executor = own_pool
    try:
        if executor is None:
            for task in tasks:
                record(fn(task))
            if meanwhile is not None:
                meanwhile()
        else:
            futures = [executor.submit(fn, task) for task in tasks]
            try:
                if meanwhile is not None:
                    meanwhile()
                for fut in cf.as_completed(futures):
                    record(fut.result())
            finally:
                for fut in futures:
                    fut.cancel()
    finally:
        if own_pool is not None:
            own_pool.shutdown(wait=True, cancel_futures=True)
