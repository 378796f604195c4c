"""Checkpoints of ``relucore.Trainer``: the layout of :meth:`Trainer.state_dict` and its reading.

The state is plain Python/numpy values, versioned (``STATE_VERSION``); :meth:`Trainer.from_state`
and pickling read it back here, so the one layout has one writer and one reader.
"""

from __future__ import annotations

from typing import Any, Dict

import numpy as np

from relucore import _core
from relucore import _scaling as scaling
from relucore._validation import check_choice

__all__ = ["STATE_VERSION", "state_dict", "load_state"]

#: Version of the layout returned by :meth:`Trainer.state_dict`.
STATE_VERSION = 1

# GDSettings fields carried by a checkpoint; enums are stored by name.
_SETTINGS_FIELDS = ("eta", "max_steps", "tol", "record_every", "divergence_factor", "leaky_slope")
# Fields added later, with the value a checkpoint written before them implies.
_SETTINGS_OPTIONAL = {"train_outer": False, "output_scale": 1.0}
_SETTINGS_ENUMS = {"activation": _core.Activation, "loss": _core.Loss}

_STATE_ARRAYS = ("K", "y", "signs", "alpha", "beta", "mask", "alpha0", "beta0")
_STATE_KEYS = _STATE_ARRAYS + (
    "version",
    "steps_taken",
    "stable_step",
    "settings",
    "X",
    "W0",
    "steps",
    "tol",
    "init",
    "on_divergence",
)


def _settings_to_dict(s) -> Dict[str, Any]:
    out = {f: getattr(s, f) for f in _SETTINGS_FIELDS + tuple(_SETTINGS_OPTIONAL)}
    out.update({f: getattr(s, f).name for f in _SETTINGS_ENUMS})
    return out


def _settings_from_dict(d: Dict[str, Any]):
    s = _core.GDSettings()
    for f in _SETTINGS_FIELDS:
        setattr(s, f, d[f])
    for f, default in _SETTINGS_OPTIONAL.items():
        setattr(s, f, d.get(f, default))
    for f, enum in _SETTINGS_ENUMS.items():
        setattr(s, f, getattr(enum, d[f]))
    s.validate()
    return s


def state_dict(self) -> Dict[str, Any]:
    """The state of trainer ``self`` (see :meth:`relucore.Trainer.state_dict`)."""
    e = self._engine
    return {
        "version": STATE_VERSION,
        "K": np.array(e.K),
        "y": np.array(e.labels),
        "signs": np.array(e.outer),
        "signs0": self._signs0.copy(),
        "alpha": np.array(e.alpha),
        "beta": np.array(e.beta),
        "mask": np.array(e.mask),
        "steps_taken": int(e.steps_taken),
        "stable_step": int(e.stable_step),
        "settings": _settings_to_dict(e.settings),
        "X": None if self._X is None else self._X.copy(),
        "W0": None if self._W0 is None else self._W0.copy(),
        "alpha0": self._alpha0.copy(),
        "beta0": self._beta0.copy(),
        "steps": self._steps,
        "tol": self._tol,
        "init": self._init,
        "on_divergence": self._on_divergence,
        "bias": self._bias,
        # The engine's state is that of the exactly rescaled copy where the data run rescaled: X / 2^ex, y / 2^ey.
        "scaling": None if self._sc is None else (int(self._sc.ex[0]), int(self._sc.ey[0])),
        "output_bias": e.output_bias,
        "output_bias0": self._output_bias0,
        "loss_weights": None if self._loss_weights is None else self._loss_weights.copy(),
        "reduction": self._reduction,
    }


def load_state(self, state: Dict[str, Any]) -> None:
    """Puts trainer ``self`` in ``state`` (see :meth:`relucore.Trainer.from_state`)."""
    if not isinstance(state, dict):
        raise TypeError(f"state must be a dict from Trainer.state_dict(), got {type(state).__name__}")
    missing = [k for k in _STATE_KEYS if k not in state]
    if missing:
        raise ValueError(f"state is missing {missing} (not a Trainer.state_dict())")
    if state["version"] != STATE_VERSION:
        raise ValueError(f"state has layout version {state['version']}, this relucore reads {STATE_VERSION}")
    arr = {k: np.ascontiguousarray(state[k], dtype=np.float64) for k in _STATE_ARRAYS if k != "mask"}
    settings = _settings_from_dict(state["settings"])
    engine = _core.DualTrainer(
        K=arr["K"], y=arr["y"], outer=arr["signs"], alpha0=arr["alpha"], beta0=arr["beta"], settings=settings
    )
    mask = np.ascontiguousarray(state["mask"], dtype=np.uint8)
    engine.restore(int(state["steps_taken"]), mask, int(state["stable_step"]))
    # beta is resynchronised from the original start, as in the uninterrupted run
    engine.set_reference(arr["alpha0"], arr["beta0"])
    self._engine = engine
    self._X = None if state["X"] is None else np.ascontiguousarray(state["X"], dtype=np.float64)
    self._W0 = None if state["W0"] is None else np.ascontiguousarray(state["W0"], dtype=np.float64)
    self._alpha0 = arr["alpha0"]
    self._beta0 = arr["beta0"]
    self._signs0 = np.array(state.get("signs0", arr["signs"]), dtype=np.float64)
    self._bias = bool(state.get("bias", False))
    sc = state.get("scaling")
    self._sc = None if sc is None else scaling.Scaling(ex=np.array([int(sc[0])]), ey=np.array([int(sc[1])]))
    self._steps = int(state["steps"])
    self._tol = float(state["tol"])
    self._init = str(state["init"])
    self._on_divergence = check_choice(state["on_divergence"], "on_divergence", ("status", "raise"))
    self._set_loss_options(
        state.get("loss_weights"),
        state.get("output_bias"),
        state.get("reduction", "half_sum"),
        state.get("output_bias0"),
    )
