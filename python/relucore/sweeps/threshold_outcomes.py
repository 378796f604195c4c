"""The outcomes of :func:`relucore.threshold`: a user's callable, or a built-in outcome run as
sweep trials (one batched C++ call per design point), and the task that runs a group of trials
wherever the executor puts it.

Every trial draws from its own ``SeedSequence(entropy, spawn_key=(*key, index))``, ``key`` the two
words of :func:`~relucore.sweeps.config.config_key` hashed from the combination's ``given`` values
and the batch number, ``index`` the trial's place in its batch: never from the order of execution.
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Tuple

import numpy as np

from relucore import _core
from relucore.sweeps.config import config_key, normalise_config, trial_seed

__all__ = ["BUILTIN_OUTCOMES", "batch_key", "run_trials", "outcome_name", "MINNORM_GAP"]

#: ``gap_normalized`` below which a certified limit counts as the minimum-norm solution.
MINNORM_GAP = 1e-6

#: name -> (sweep configuration keys set for the outcome, meaning). The trial is a trial of
#: :func:`relucore.sweep` (the keys of docs/sweeps.md; the ``given`` values and the axis override them).
BUILTIN_OUTCOMES: Dict[str, Tuple[Dict[str, Any], str]] = {
    "interpolates": (
        {"minnorm": False, "gram_stats": False},
        "GD reaches the loss tolerance within its step budget (status converged, or certified with steps = inf)",
    ),
    "pattern_frozen_after_step_1": (
        {"minnorm": False, "gram_stats": False},
        "no activation pattern changes after GD's first step (pattern_stable_step <= 1)",
    ),
    "limit_is_minnorm": (
        {"steps": "inf", "minnorm": True, "gram_stats": False},
        f"train(steps=inf) certifies its limit and it is the minimum-norm interpolator "
        f"(limit_holds = 1 and gap_normalized <= {MINNORM_GAP:g})",
    ),
}


def outcome_name(outcome) -> str:
    """The name a store records: a built-in's name, or a callable's ``module.qualname``."""
    if isinstance(outcome, str):
        return outcome
    return f"{getattr(outcome, '__module__', '?')}.{getattr(outcome, '__qualname__', type(outcome).__name__)}"


def batch_key(combination: Dict[str, Any], batch: int) -> Tuple[int, int]:
    """The two key words of one batch of one combination."""
    return config_key({"given": combination, "batch": int(batch)})


def _success(name: str, row: Dict[str, Any]) -> bool:
    if row.get("status") == _core.Status.error.name:
        raise RuntimeError(f"built-in outcome {name!r}: the trial failed: {row.get('error')}")
    if name == "interpolates":
        return _core.Status[row["status"]].success  # converged, or a certified limit (steps = inf)
    if name == "pattern_frozen_after_step_1":
        return int(row["pattern_stable_step"]) <= 1
    return int(row["limit_holds"]) == 1 and float(row["gap_normalized"]) <= MINNORM_GAP


def _builtin(task: Dict[str, Any]) -> List[bool]:
    from relucore.sweeps.task import columns_to_rows, run_batch

    name = task["outcome"]
    cfg = normalise_config({**BUILTIN_OUTCOMES[name][0], **task["params"]}, where="outcome parameters")
    out = run_batch(
        {
            "batch": 0,
            "config": cfg,
            "config_index": 0,
            "key": list(task["key"]),
            "entropy": task["entropy"],
            "trials": list(task["indices"]),
            "n_threads": task.get("n_threads", 1),
            "measure": None,
        }
    )
    rows = out["rows"] if "rows" in out else columns_to_rows(out["columns"])
    by_trial = {int(r["trial"]): r for r in rows}
    return [_success(name, by_trial[int(i)]) for i in task["indices"]]


def _as_bool(value, outcome: Callable) -> bool:
    if isinstance(value, (bool, np.bool_)) or (isinstance(value, (int, np.integer)) and value in (0, 1)):
        return bool(value)
    raise TypeError(f"outcome {outcome_name(outcome)} must return a bool, got {type(value).__name__}: {value!r}")


def run_trials(task: Dict[str, Any]) -> Dict[str, Any]:
    """Runs one group of trials (one design point of one batch of one search): ``task`` holds the
    ``outcome`` (callable or built-in name), the trial ``params``, the batch's ``key``, the root
    ``entropy`` and the ``indices`` of the trials in their batch. Returns ``{"id", "outcomes"}``."""
    outcome = task["outcome"]
    if isinstance(outcome, str):
        results = _builtin(task)
    else:
        results = []
        for i in task["indices"]:
            rng = np.random.default_rng(trial_seed(task["entropy"], task["key"], int(i)))
            results.append(_as_bool(outcome(dict(task["params"]), rng), outcome))
    return {"id": task["id"], "outcomes": results}
