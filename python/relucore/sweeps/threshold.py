"""``relucore.threshold``: where a probability crosses p, with a confidence interval, found by a
sequential design (docs/math.md, "Phase diagrams: where a probability crosses p")."""

from __future__ import annotations

import itertools
import math
import numbers
import warnings
from typing import Any, Dict, List, Optional

import numpy as np

from relucore._renamed import removed_parameters
from relucore._validation import check_choice, check_int
from relucore.sweeps.api import _progress_bar, check_executor, check_picklable, run_tasks
from relucore.sweeps.config import plain_scalar, root_entropy
from relucore.sweeps.threshold_fit import Axis
from relucore.sweeps.threshold_outcomes import BUILTIN_OUTCOMES, batch_key, outcome_name, run_trials
from relucore.sweeps.threshold_search import NonMonotoneWarning, Search
from relucore.sweeps.threshold_store import ThresholdStore, search_key

__all__ = ["threshold", "NonMonotoneWarning", "REL_WIDTH", "BATCH_SIZE", "MAX_TRIALS"]

#: The search of a combination stops when its interval is narrower than this fraction of its estimate.
REL_WIDTH = 0.25
#: Trials per batch of one combination (the design's unit: results do not depend on the executor).
BATCH_SIZE = 32
#: Default ``max_trials`` (per combination).
MAX_TRIALS = 1024


def _check_bounds(bounds, axis: str):
    try:
        lo, hi = bounds
    except (TypeError, ValueError):
        raise TypeError(f"bounds must be a pair (low, high) of numbers, got {bounds!r}") from None
    for v in (lo, hi):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (numbers.Real, np.floating, np.integer)):
            raise TypeError(f"bounds must be a pair (low, high) of numbers, got {bounds!r}")
        if not math.isfinite(float(v)):
            raise ValueError(f"bounds must be finite, got {bounds!r}")
    if not float(lo) < float(hi):
        raise ValueError(f"bounds must have low < high, got {bounds!r}")
    integer = all(isinstance(v, (numbers.Integral, np.integer)) for v in (lo, hi))
    if integer and int(hi) - int(lo) < 2:
        raise ValueError(f"bounds of the integer axis {axis!r} must hold at least 3 values, got {bounds!r}")
    return float(lo), float(hi), integer


def _check_probability(value, name: str) -> float:
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.floating)):
        raise TypeError(f"{name} must be a number in (0, 1), got {type(value).__name__}")
    if not 0.0 < float(value) < 1.0:
        raise ValueError(f"{name} must lie in (0, 1), got {value!r}")
    return float(value)


def _combinations(given, axis: str) -> List[Dict[str, Any]]:
    if given is None:
        return [{}]
    if not isinstance(given, dict):
        raise TypeError(f"given must be a dict of lists, got {type(given).__name__}")
    if axis in given:
        raise ValueError(f"given must not hold the axis {axis!r}")
    values = []
    for k, v in given.items():
        if not isinstance(k, str):
            raise TypeError(f"given's keys must be str, got {k!r}")
        v = list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v]
        if not v:
            raise ValueError(f"given[{k!r}] is empty")
        values.append([plain_scalar(x) for x in v])
    return [dict(zip(given, combo)) for combo in itertools.product(*values)]


def _entropy(rng, checkpoint) -> int:
    if isinstance(rng, (numbers.Integral, np.integer, np.random.SeedSequence)) and not isinstance(rng, bool):
        return root_entropy(rng)
    if checkpoint is not None:
        raise ValueError(
            f"checkpoint= needs a reproducible rng (a non-negative int or a root SeedSequence), got "
            f"{type(rng).__name__}: a resume must draw the same trials"
        )
    if rng is None:
        return int(np.random.SeedSequence().entropy)
    if isinstance(rng, np.random.Generator):
        return int(rng.integers(0, 2**63))
    raise TypeError(f"rng must be None, an int, a SeedSequence or a numpy Generator, got {type(rng).__name__}")


def _check_outcome(outcome, executor) -> None:
    if isinstance(outcome, str):
        check_choice(outcome, "outcome", tuple(BUILTIN_OUTCOMES))
    elif not callable(outcome):
        raise TypeError(f"outcome must be callable or a built-in name {tuple(BUILTIN_OUTCOMES)}, got {outcome!r}")
    else:
        check_picklable(outcome, "outcome", executor)


@removed_parameters("threshold")
def threshold(
    outcome,
    axis: str,
    bounds,
    *,
    given: Optional[Dict[str, Any]] = None,
    p: float = 0.5,
    confidence: float = 0.9,
    max_trials: Optional[int] = None,
    rng=None,
    executor=None,
    checkpoint=None,
    progress: Optional[bool] = None,
    rel_width: float = REL_WIDTH,
    chunk_size: int = BATCH_SIZE,
    link: str = "logit",
    scale: Optional[str] = None,
):
    """Where the probability of ``outcome`` crosses ``p`` along ``axis``, with a confidence interval.

    For each combination of the ``given`` values, trials run in batches of ``chunk_size``: the
    first spread over ``bounds``, each later one where it narrows the interval of the crossing
    most. After each batch a monotone link model ``P(x) = f + (c - f) F(a + b u(x))`` (``F``
    logistic or normal, ``u`` the axis or its logarithm, the floor ``f`` and ceiling ``c`` 0 and 1
    unless a likelihood ratio test asks for them) is fitted by maximum likelihood; the interval of
    the crossing is its profile-likelihood interval (Wilks). The search stops when the interval
    is narrower than ``rel_width`` times the estimate (after at least 256 trials), when both ends of ``bounds`` lie on the
    same side of p (Wilson intervals at ``confidence``: no crossing), or at ``max_trials``.
    docs/math.md ("Phase diagrams") gives the method and its references; docs/sweeps.md the usage.

    Parameters
    ----------
    outcome : callable or str
        ``outcome(params, rng) -> bool``, ``params`` a dict of the axis value and the ``given``
        values, ``rng`` the trial's own ``numpy.random.Generator``. With a process or Dask
        executor it must be picklable (a module-level function). Or a built-in outcome, run as
        :func:`relucore.sweep` trials (``params`` are sweep configuration keys, docs/sweeps.md):
        ``"interpolates"`` (GD converges within its step budget), ``"pattern_frozen_after_step_1"``
        (no activation pattern changes after step 1), ``"limit_is_minnorm"`` (``steps=inf``
        certifies the limit and it is the minimum-norm interpolator); see
        ``relucore.sweeps.threshold_outcomes.BUILTIN_OUTCOMES``.
    axis : str
        The searched parameter's name.
    bounds : (low, high)
        Its range; an integer axis when both are ints (trials then run at integers).
    given : dict, optional
        Values of the other parameters: a list (one search per combination, Cartesian product
        in key order) or a single value.
    p : float
        The probability whose crossing is sought, in (0, 1); default 0.5.
    confidence : float
        Level of the interval, in (0, 1); default 0.9.
    max_trials : int, optional
        Trials per combination at most; default ``MAX_TRIALS`` (1024).
    rng : int, SeedSequence, Generator or None
        Root seed. Trial ``i`` of batch ``b`` of a combination draws from
        ``SeedSequence(root, spawn_key=(*key, i))``, ``key`` hashed from the combination and ``b``:
        the same ``rng`` gives the same table on any executor and any number of workers. None:
        fresh entropy; a Generator: one draw of it as the root.
    executor : concurrent.futures.Executor, optional
        Where trials run (the groups of one round of batches side by side); None: here, in order.
    checkpoint : str or os.PathLike, optional
        A sweep store (SQLite) that commits the trials as they finish, so that an interrupted
        search resumes with the identical result; needs an int or SeedSequence ``rng``.
    progress : bool, optional
        tqdm progress bar (trials); default: only when stderr is a terminal.
    rel_width : float
        Stop when ``(high - low) / |estimate| <= rel_width``, after at least
        ``relucore.sweeps.threshold_search.MIN_TRIALS`` (256) trials; default ``REL_WIDTH`` (0.25).
    chunk_size : int
        Trials per batch of a combination; default ``BATCH_SIZE`` (32). (0.x: ``batch_size``,
        refused naming it: ``batch_size`` is the SGD mini-batch of :func:`relucore.meanfield.train`.)
    link : {"logit", "probit"}
        ``F``: the logistic or the normal distribution function.
    scale : {"log", "linear"}, optional
        The model in the logarithm of the axis or the axis itself; default log when ``low > 0``.

    Returns
    -------
    pandas.DataFrame (a list of dicts without pandas)
        One row per combination: its ``given`` values, ``estimate``, ``low``, ``high`` (NaN when
        P does not cross p in ``bounds``), ``trials``, ``successes``, ``crosses`` (False: P stays
        on one side of p), ``narrow`` (the width was reached), ``status`` (``crossing``,
        ``never_crosses`` or ``max_trials``), the bracket seen (``bracket_low``, ``bracket_high``:
        the smallest and largest axis values tried; ``p_at_low``, ``p_at_high``: the fraction of
        successes there) and ``model`` (the fitted link, scale and extras). ``table.attrs["trials"]``
        holds every trial, a list of dicts (``combination``, ``batch``, ``index``, the axis value,
        ``outcome``; ``pandas.DataFrame(table.attrs["trials"])`` makes it a table).
        Warns :class:`NonMonotoneWarning` for a combination whose outcomes do not look monotone.

    Examples
    --------
    >>> import numpy as np, relucore
    >>> def outcome(params, rng):  # P falls from 1 to 0 around n = 50
    ...     return rng.random() < 1 / (1 + (params["n"] / 50) ** 4)
    >>> t = relucore.threshold(outcome, axis="n", bounds=(5, 200), rng=3, progress=False)
    >>> bool(t["low"][0] < 50 < t["high"][0])
    True
    """
    if not isinstance(axis, str):
        raise TypeError(f"axis must be a str, got {type(axis).__name__}")
    lo, hi, integer = _check_bounds(bounds, axis)
    p = _check_probability(p, "p")
    confidence = _check_probability(confidence, "confidence")
    rel_width = float(rel_width)
    if not rel_width > 0:
        raise ValueError(f"rel_width must be positive, got {rel_width!r}")
    batch_size = check_int(chunk_size, "chunk_size", minimum=8)
    max_trials = MAX_TRIALS if max_trials is None else check_int(max_trials, "max_trials", minimum=batch_size)
    check_choice(link, "link", ("logit", "probit"))
    scale = ("log" if lo > 0 else "linear") if scale is None else scale
    check_choice(scale, "scale", ("log", "linear"))
    if scale == "log" and lo <= 0:
        raise ValueError(f"scale='log' needs bounds above 0, got {bounds!r}")
    check_executor(executor)
    _check_outcome(outcome, executor)
    combos = _combinations(given, axis)
    entropy = _entropy(rng, checkpoint)
    ax = Axis(lo, hi, scale == "log", integer)
    settings = dict(axis=axis, bounds=[lo, hi], integer=integer, p=p, confidence=confidence, rel_width=rel_width)
    settings.update(batch_size=batch_size, link=link, scale=scale)
    searches = [
        Search(ax, p=p, confidence=confidence, rel_width=rel_width, batch_size=batch_size, link=link) for _ in combos
    ]
    store = None
    if checkpoint is not None:
        store = ThresholdStore(checkpoint, entropy, outcome_name(outcome), [search_key(settings, c) for c in combos])
    bar = _progress_bar(progress, max_trials * len(combos), 0, desc="threshold")
    log: List[Dict[str, Any]] = []
    try:
        run = dict(outcome=outcome, axis=axis, entropy=entropy, executor=executor, store=store, bar=bar, log=log)
        while any(s.status is None for s in searches):
            _round(searches, combos, max_trials, **run)
    finally:
        if bar is not None:
            bar.total = bar.n  # the searches stop where they stop: the bar ends full
            bar.close()
        if store is not None:
            store.close()
    return _table(searches, combos, axis, log)


def _value(search: Search, x: float):
    """An axis value as the outcome sees it: an int on an integer axis."""
    return int(x) if search.axis.integer else float(x)


def _round(searches, combos, max_trials, *, outcome, axis, entropy, executor, store, bar, log) -> None:
    """One batch of every unfinished search: designed, looked up in the store, the rest run
    (grouped by design point, all groups of the round side by side on ``executor``), then fitted."""
    plans: Dict[int, Any] = {}
    tasks: List[Dict[str, Any]] = []
    for j, s in enumerate(searches):
        if s.status is not None:
            continue
        b = s.batches
        xs = s.design()
        out: List[Optional[bool]] = [None] * len(xs)
        groups: Dict[float, List[int]] = {}
        for i, x in enumerate(xs):
            hit = store.lookup(j, b, i, x) if store is not None else None
            if hit is None:
                groups.setdefault(x, []).append(i)
            else:
                out[i] = hit
        if bar is not None:
            bar.update(sum(o is not None for o in out))
        for x, idx in groups.items():
            task = dict(outcome=outcome, params={**combos[j], axis: _value(s, x)}, key=batch_key(combos[j], b))
            tasks.append(dict(task, id=len(tasks), entropy=entropy, indices=idx, search=j, batch=b))
        plans[j] = (b, xs, out)

    def record(res: Dict[str, Any]) -> None:
        task = tasks[res["id"]]
        j, b, idx = task["search"], task["batch"], task["indices"]
        xs, out = plans[j][1], plans[j][2]
        for i, o in zip(idx, res["outcomes"]):
            out[i] = o
        if store is not None:
            store.save(j, b, idx, [xs[i] for i in idx], res["outcomes"])
        if bar is not None:
            bar.update(len(idx))

    run_tasks(tasks, executor, 0, record, fn=run_trials)
    for j, (b, xs, out) in plans.items():
        searches[j].add(xs, out)
        s = searches[j]
        log.extend(
            {"combination": j, "batch": b, "index": i, axis: _value(s, x), "outcome": o}
            for i, (x, o) in enumerate(zip(xs, out))
        )
        searches[j].update(max_trials)


def _table(searches, combos, axis: str, log):
    rows = []
    for s, combo in zip(searches, combos):
        ok, g2 = s.monotone()
        if not ok:
            where = ", ".join(f"{k}={v!r}" for k, v in combo.items()) or "the search"
            warnings.warn(
                NonMonotoneWarning(
                    f"threshold: the outcomes of {where} do not look monotone in {axis!r} (likelihood ratio "
                    f"against the isotonic fit G2 = {g2:.1f}); the crossing of a monotone model may mislead"
                ),
                stacklevel=3,
            )
        rows.append({**combo, **s.row()})
    try:
        import pandas as pd
    except ImportError:
        return rows
    table = pd.DataFrame(rows)
    table.attrs.update(axis=axis, p=searches[0].p, confidence=searches[0].confidence)
    table.attrs["trials"] = log  # plain records: pandas compares attrs, e.g. in concat
    return table
