"""Sweep configurations: grid expansion, defaults, canonical keys and per-trial seeds.

A configuration is a flat dict of plain values (numbers, strings, bools, None
and lists of those). Its *key* is a hash of its canonical JSON form (defaults
filled in), and a trial's randomness comes from the SeedSequence child
``SeedSequence(root_entropy, spawn_key=(key_hi, key_lo, trial))``: adding,
removing or reordering configurations or trials never changes the seeds (and
so the rows) of the others.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import numbers
from typing import Any, Dict, List, Mapping, Sequence, Tuple

import numpy as np

from relucore import _core
from relucore._renamed import refuse_renamed_keys
from relucore._validation import check_choice, check_int
from relucore.gd.defaults import resolve_engine
from relucore.gd.loss_options import REDUCTIONS

__all__ = [
    "SWEEP_FORMAT",
    "GENERATOR_VERSION",
    "FORMAT_CHANGES",
    "GENERATOR_CHANGES",
    "DEFAULTS",
    "CONFIG_COLUMNS",
    "RENAMED_KEYS",
    "config_column",
    "stored_config",
    "CONFIG_KINDS",
    "SAMPLER_KEYS",
    "expand_grid",
    "canonical_json",
    "config_key",
    "trial_seed",
    "seed_string",
    "seed_column",
    "root_entropy",
    "sampler_option",
    "engine_of",
]

#: Version of what a row is a function of besides its configuration and seed: the random
#: streams (numpy's generators, the Philox Bartlett sampler), the seeding rule
#: (:func:`trial_seed`, :func:`config_key`) and the configuration keys. A store records it and
#: refuses to resume rows of another version. Bump it with any change that alters rows.
#: 1: relucore 0.1.0. 2: relucore 0.2.0 (:data:`FORMAT_CHANGES` lists what changed: stalled runs,
#: new random streams, ``engine="auto"``, renamed and new keys, BLAS kernels), one break for all.
#: 3: relucore 1.0 (one vocabulary: a renamed column).
SWEEP_FORMAT = 3

#: Version of the random streams the rows' data come from (``_core.defaults.generator_version``,
#: defined in relucore/defaults.hpp): part of a store's identity besides :data:`SWEEP_FORMAT`, so
#: that a store whose rows were drawn from other streams (format 1, or a format-2 store written
#: before the version was recorded) is refused on resume rather than mixed with new rows.
GENERATOR_VERSION = int(_core.defaults.generator_version)

#: What each generator version changed in the streams, for the message that refuses to resume a store.
GENERATOR_CHANGES = {
    1: "explicit-X data (relucore.sample, explicit-X trials) from the counter-based generator",
    2: "Gram-mode data (relucore.sample_gram, sample_gram_batch, Gram-mode trials) from the counter-based "
    "generator too (numpy's Philox before)",
}

#: What each sweep format changed in the rows, for the message that refuses to resume a store.
FORMAT_CHANGES = {
    2: "runs that stop at a stationary point leaving examples unfit are 'stalled' (format 1 wrote 'converged'); "
    "the default engine is 'auto' (format 1: 'dual'), which changes every default configuration's key and so its "
    "draws; non-default inits are set up by the C++ prepare step (last bits of those runs); "
    "the key 'loss_name' is 'loss' (the table column keeps the name 'loss_name'), and the keys 'train_outer', "
    "'output_scale', 'bias', 'reduction' and 'output_bias' are new, so every configuration has a new key and new "
    "seeds; "
    "long runs resynchronise beta from alpha every 1024 steps, which changes the last bits of runs longer than "
    "that; the limit_holds, limit_step and limit_margin columns; "
    "K = X X^T (n >= 32) and W = W0 + C X (m >= 4 or n d >= 2^20) are formed by scipy's BLAS when it can be "
    "kept to one thread (last bits); "
    "the weight-space engine's products W X^T and C X (m >= 4 and m n d >= 2000) run on the same BLAS (last bits), "
    "and engine='auto' is dual when d > 0.44 n, or d > 1.2 n where those products run on the BLAS (was d > 0.36 n); "
    "explicit-X trials and relucore.sample draw z from relucore's counter-based generator (Philox4x32-10, "
    "keyed by one 64-bit draw of the trial's generator; K accumulated block by block as X is drawn), so old "
    "seeds give new draws of the same law (stores record the generator version); "
    "Gram-mode trials, relucore.sample_gram and sample_gram_batch draw K and y from the same generator "
    "(each Bartlett factor entry and label at its own stream and index, keyed by the trial seed's "
    "generate_state(1, uint64)), so old seeds give new Gram-mode draws of the same law (generator version 2); "
    "the Gram fast path's gram_* columns use the trial's extreme eigenvalues (last bits); "
    "steps=inf runs whose limit is not certified return the exact continuation from their tol state, and a "
    "failed proof schedules the next try (limit_step and the last bits of certified limits change); "
    "on CPUs with AVX-512F the weight engine's products run on relucore's packed kernels (m >= 4, m n d >= 2000, "
    "n d <= 2^23; last bits)",
    3: "the column gap_normalised is gap_normalized, the spelling of relucore.normalized_gap (the store of an "
    "older format is still read and exported under the new name)",
}

#: Configuration keys with their defaults. ``None`` means "the default of the
#: function the key is passed to" (``sample``/``sample_gram`` or ``train``).
DEFAULTS: Dict[str, Any] = {
    "n": 10,
    "d": 1000,
    "spectrum": None,  # sample's default (isotropic)
    "z": None,  # sample's default (Gaussian); ignored with use_gram
    "labels": None,  # sample's default
    "use_gram": False,  # draw K with sample_gram instead of X with sample
    "m": None,  # number of neurons; default len(signs) or 1
    "signs": None,  # default: first ceil(m/2) neurons +1, the rest -1
    "init": "positive",
    "init_scale": None,
    "eps": None,
    "eta": None,
    "steps": 10_000,  # or "inf" (float inf accepted): train(steps=np.inf), the certified limit
    "tol": None,
    "engine": "auto",
    "loss": "square",  # train's loss= ("square" or "logistic"); table column "loss_name"
    "activation": "relu",
    "train_outer": False,  # train's train_outer=, output_scale=, bias= (need minnorm=False when set)
    "output_scale": 1.0,
    "bias": False,
    "reduction": "half_sum",  # train's reduction= and output_bias= (need minnorm=False when set)
    "output_bias": None,
    "minnorm": True,  # compute w* and the gap (a QP per trial)
    "gram_stats": True,  # compute the gram_* columns (relucore.gram_stats)
}

#: The type of each key's table column, fixed by the key so that a row never depends on the
#: other configurations of the grid: "i" int64, "b" bool, "U" text (None as "", lists as
#: JSON), "f" float64 (None as NaN; text, with lists as JSON, when some configuration of the
#: grid gives the key a list, such as per-example ``eps``).
CONFIG_KINDS: Dict[str, str] = {
    "n": "i",
    "d": "i",
    "spectrum": "U",
    "z": "U",
    "labels": "U",
    "use_gram": "b",
    "m": "i",
    "signs": "U",
    "init": "U",
    "init_scale": "f",
    "eps": "f",
    "eta": "f",
    "steps": "i",
    "tol": "f",
    "engine": "U",
    "loss": "U",
    "activation": "U",
    "train_outer": "b",
    "output_scale": "f",
    "bias": "b",
    "reduction": "U",
    "output_bias": "f",
    "minnorm": "b",
    "gram_stats": "b",
}

#: The table (and store) column of a configuration key where it differs from the key: the
#: key ``loss`` names the loss function, and the column ``loss`` holds the final loss.
CONFIG_COLUMNS: Dict[str, str] = {"loss": "loss_name"}

#: Keys renamed in sweep format 2 (old -> new): refused in a grid since 1.0 (a ValueError naming the
#: new key); old stores and checkpoints hold the old names, which :func:`stored_config` reads.
RENAMED_KEYS: Dict[str, str] = {"loss_name": "loss"}


def config_column(key: str) -> str:
    """The table column of configuration key ``key``."""
    return CONFIG_COLUMNS.get(key, key)


def stored_config(cfg: Mapping[str, Any]) -> Dict[str, Any]:
    """A configuration as a store or an old checkpoint holds it, with today's keys: renamed keys
    under their new names and keys added since at their defaults (no warning: this is data)."""
    out = dict(DEFAULTS)
    for k, v in cfg.items():
        out[RENAMED_KEYS.get(k, k)] = v
    return out


#: Keys forwarded to the sampler (only when not None).
SAMPLER_KEYS = ("spectrum", "z", "labels")


def engine_of(cfg: Dict[str, Any]) -> str:
    """The engine a configuration's trials run on: ``cfg["engine"]``, with ``"auto"`` resolved by
    :func:`relucore.gd.defaults.resolve_engine` (Gram-only configurations run the dual engine)."""
    d = None if cfg["use_gram"] else cfg["d"]
    return resolve_engine(cfg["engine"], cfg["n"], d, len(cfg["signs"]))


def sampler_option(v):
    """A sampler option as the sampler takes it: ``["spiked", 5, 10.0, 1.0]`` (JSON and TOML have
    no tuples) -> ``("spiked", 5, 10.0, 1.0)``; anything else unchanged."""
    if isinstance(v, list) and v and isinstance(v[0], str):
        return tuple(v)
    return v


def plain_scalar(value):
    """``value`` as a plain Python scalar: None, bool, str, int or float (numpy scalars and
    0-d arrays converted, non-finite floats kept); TypeError naming its type otherwise."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if isinstance(value, (numbers.Integral, np.integer)):
        return int(value)
    if isinstance(value, (numbers.Real, np.floating)):
        return float(value)
    raise TypeError(type(value).__name__)


def _plain(value, where: str):
    """Checks a configuration value is plain data and returns it JSON-normalised."""
    if isinstance(value, (list, tuple)) or (isinstance(value, np.ndarray) and value.ndim > 0):
        return [_plain(v, where) for v in (value.tolist() if isinstance(value, np.ndarray) else value)]
    try:
        v = plain_scalar(value)
    except TypeError:
        raise TypeError(
            f"{where} must be a number, string, bool, None or a list of those, got {type(value).__name__}"
        ) from None
    if isinstance(v, float) and not np.isfinite(v):
        raise ValueError(f"{where} must be finite, got {v}")
    return v


def default_signs(m: int) -> List[float]:
    """``m`` outer signs: the first ``ceil(m/2)`` are +1, the rest -1 ((1,), (1, -1), ...)."""
    p = (m + 1) // 2
    return [1.0] * p + [-1.0] * (m - p)


def _is_inf(v) -> bool:
    """``steps = inf`` as a configuration value: float inf or the string "inf" (JSON and TOML
    have no infinity). It is kept as the string "inf", so the key stays plain JSON."""
    if isinstance(v, str):
        return v == "inf"
    return isinstance(v, (float, np.floating)) and v == np.inf


def normalise_config(cfg: Mapping[str, Any], where: str = "config") -> Dict[str, Any]:
    """Validates a configuration and fills in defaults (m and signs made consistent)."""
    if not isinstance(cfg, Mapping):
        raise TypeError(f"{where} must be a dict, got {type(cfg).__name__}")
    refuse_renamed_keys(cfg, where, RENAMED_KEYS)
    unknown = sorted(set(cfg) - set(DEFAULTS))
    if unknown:
        raise ValueError(f"{where} has unknown key(s) {unknown}; known keys: {sorted(DEFAULTS)}")
    out = dict(DEFAULTS)
    for k, v in cfg.items():
        out[k] = "inf" if k == "steps" and _is_inf(v) else _plain(v, f"{where}[{k!r}]")
    out["n"] = check_int(out["n"], f"{where}['n']", minimum=1)
    out["d"] = check_int(out["d"], f"{where}['d']", minimum=1)
    if out["steps"] != "inf":
        out["steps"] = check_int(out["steps"], f"{where}['steps']", minimum=0)
    for k in ("use_gram", "minnorm", "gram_stats", "train_outer", "bias"):
        if not isinstance(out[k], bool):
            raise TypeError(f"{where}[{k!r}] must be a bool, got {type(out[k]).__name__}")
    scale = out["output_scale"]
    if isinstance(scale, bool) or not isinstance(scale, (int, float)) or not scale > 0:
        raise ValueError(f"{where}['output_scale'] must be a positive number, got {out['output_scale']!r}")
    out["output_scale"] = float(out["output_scale"])
    check_choice(out["reduction"], f"{where}['reduction']", REDUCTIONS)
    if out["output_bias"] is not None:
        bias = out["output_bias"]
        if isinstance(bias, bool) or not isinstance(bias, (int, float)) or not np.isfinite(bias):
            raise ValueError(f"{where}['output_bias'] must be None or a finite number, got {bias!r}")
        out["output_bias"] = float(bias)
    if out["minnorm"] and (
        out["train_outer"]
        or out["bias"]
        or out["output_scale"] != 1.0
        or out["reduction"] != "half_sum"
        or out["output_bias"] is not None
    ):
        raise ValueError(
            f"{where}: the minimum-norm gap is derived for fixed signs without bias and output_scale=1 on the loss "
            "1/2 ||h - y||^2; set 'minnorm': False with train_outer, bias, output_scale, reduction or output_bias"
        )
    signs, m = out["signs"], out["m"]
    if signs is not None:
        if not isinstance(signs, list):
            signs = [signs]
        signs = [float(s) for s in signs]
        if m is not None and check_int(m, f"{where}['m']", minimum=1) != len(signs):
            raise ValueError(f"{where}: m={m} disagrees with signs {signs} (m must equal len(signs))")
    else:
        m = 1 if m is None else check_int(m, f"{where}['m']", minimum=1)
        signs = default_signs(m)
    out["signs"], out["m"] = signs, len(signs)
    return out


def _check_signs_axis(values: List[Any]) -> None:
    """In a grid, ``signs`` maps to a list of settings, each a list of signs. A flat list of
    several signs, ``[1, -1]``, could mean one network or one run per sign: refused."""
    is_list = [isinstance(v, (list, tuple, np.ndarray)) for v in values]
    if all(is_list) or len(values) == 1:
        return
    if any(is_list):
        raise ValueError(
            "grid['signs'] mixes lists and single signs: write every value as a list of signs, e.g. [[1], [1, -1]]"
        )
    flat = [_plain(v, "grid['signs']") for v in values]
    flat = [int(v) if isinstance(v, float) and v.is_integer() else v for v in flat]
    raise ValueError(
        f"grid['signs'] = {flat} is ambiguous: each value of 'signs' is itself a list of signs. "
        f"Write {[flat]} for one network with {len(flat)} neurons, or {[[v] for v in flat]} "
        "for one run per sign"
    )


def expand_grid(grid) -> List[Dict[str, Any]]:
    """A dict of lists (Cartesian product, in key order, last key fastest) or a list of dicts.

    In a dict, a value that is not a list is a single setting; to sweep over
    list-valued settings give a list of lists (``signs``: a flat list is refused as
    ambiguous). Duplicated
    configurations are refused: they would share seeds (use more trials).
    """
    if isinstance(grid, Mapping):
        keys = list(grid)
        axes = []
        for k in keys:
            v = grid[k]
            axes.append(list(v) if isinstance(v, (list, tuple, np.ndarray)) else [v])
            if not axes[-1]:
                raise ValueError(f"grid[{k!r}] is an empty list")
            if k == "signs":
                _check_signs_axis(axes[-1])
        raw = [dict(zip(keys, combo)) for combo in itertools.product(*axes)]
    elif isinstance(grid, Sequence) and not isinstance(grid, (str, bytes)):
        raw = list(grid)
    else:
        raise TypeError(f"grid must be a dict of lists or a list of dicts, got {type(grid).__name__}")
    if not raw:
        raise ValueError("grid holds no configuration")
    configs = [normalise_config(c, f"config {i}") for i, c in enumerate(raw)]
    seen: Dict[str, int] = {}
    for i, c in enumerate(configs):
        j = seen.setdefault(canonical_json(c), i)
        if j != i:
            raise ValueError(f"configurations {j} and {i} are identical ({c}); use more trials instead")
    return configs


def canonical_json(obj) -> str:
    """Deterministic JSON text (sorted keys, no whitespace, repr floats)."""
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), allow_nan=False)


def config_key(cfg: Mapping[str, Any]) -> Tuple[int, int]:
    """Two 32-bit words hashed from a normalised configuration."""
    h = hashlib.sha256(canonical_json(dict(cfg)).encode()).digest()
    return int.from_bytes(h[:4], "little"), int.from_bytes(h[4:8], "little")


def root_entropy(rng) -> int:
    """The root seed ``rng`` (a non-negative int or a root SeedSequence) as a non-negative int (SeedSequence entropy).

    A numpy Generator is refused (``TypeError``): its state moves as it draws, so a sweep seeded
    by one could not be resumed or repeated.
    """
    if isinstance(rng, np.random.Generator):
        raise TypeError(
            "rng must be a non-negative int or a root SeedSequence, not a numpy Generator: a Generator's state moves "
            "as it draws, so a sweep seeded by one cannot be resumed or repeated"
        )
    if isinstance(rng, np.random.SeedSequence):
        if rng.spawn_key:
            raise ValueError("rng must be a root SeedSequence (no spawn_key)")
        ent = rng.entropy
        if not isinstance(ent, (numbers.Integral, np.integer)):
            raise TypeError("rng SeedSequence must have integer entropy")
        return int(ent)
    if isinstance(rng, (bool, np.bool_)) or not isinstance(rng, (numbers.Integral, np.integer)):
        raise TypeError(f"rng must be a non-negative int or a SeedSequence, got {type(rng).__name__}")
    rng = int(rng)
    if rng < 0:
        raise ValueError(f"rng must be non-negative, got {rng}")
    return rng


def trial_seed(entropy: int, key: Tuple[int, int], trial: int) -> np.random.SeedSequence:
    """The SeedSequence of one trial."""
    return np.random.SeedSequence(entropy, spawn_key=(int(key[0]), int(key[1]), int(trial)))


def _seed_prefix(entropy: int, key: Tuple[int, int]) -> str:
    return f"SeedSequence(entropy={entropy}, spawn_key=({key[0]}, {key[1]}, "


def seed_string(entropy: int, key: Tuple[int, int], trial: int) -> str:
    """Printable seed; ``eval`` with ``from numpy.random import SeedSequence`` rebuilds it."""
    return f"{_seed_prefix(entropy, key)}{trial}))"


def seed_column(entropy: int, keys, config_index: np.ndarray, trial: np.ndarray) -> np.ndarray:
    """:func:`seed_string` of each row (object array), ``keys[config_index[r]]`` and ``trial[r]``
    for row r, built by array operations (no Python call per row)."""
    prefixes = np.array([_seed_prefix(entropy, k) for k in keys], dtype=object)
    if len(trial) == 0:
        return np.empty(0, dtype=object)
    # one Python string per distinct trial number, then one concatenation per row
    distinct, inverse = np.unique(np.asarray(trial, dtype=np.int64), return_inverse=True)
    suffixes = np.array([f"{t}))" for t in distinct.tolist()], dtype=object)
    return prefixes[config_index] + suffixes[inverse.reshape(-1)]
