"""The options of a GD run, listed once: :class:`TrainOptions`.

:func:`relucore.train`, :class:`relucore.Trainer`, :func:`relucore.flow`,
:func:`~relucore.gd.prepare.prepare` and the sweeps' trials take the same keyword options. The
public calls declare them as explicit keyword parameters (so ``help()``, IDEs and type checkers
see each one) whose defaults are this class's defaults, the one home of every default; they
build one ``TrainOptions`` with :meth:`TrainOptions.from_call`. ``tests/gd/test_options.py``
checks that each declared parameter has its field's name, annotation and default object.
The meaning of each option is documented in :func:`relucore.train`.
"""

from __future__ import annotations

import dataclasses
import operator
from typing import Any, Dict, Mapping, Optional, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

from relucore.gd.defaults import C_ALPHA, C_G, DEFAULT_INIT_SCALE, LEAKY_SLOPE, STEPS

__all__ = ["TrainOptions"]


@dataclasses.dataclass(frozen=True)
class TrainOptions:
    """Every option of a GD run (see :func:`relucore.train` for their meaning).

    A frozen dataclass: pass one as ``options=`` to :func:`relucore.train` or
    :class:`relucore.Trainer`; keyword arguments given beside it override its fields.

    Parameters
    ----------
    signs, init, eps, eta, steps, tol, record, rng, n_threads, engine, assignment
        The options of :func:`relucore.train`, with the same meanings and defaults.
    init_scale, C_g, C_alpha, loss, activation, leaky_slope, on_divergence
        The options of :func:`relucore.train`, with the same meanings and defaults.
    train_outer, output_scale, bias
        The two-layer options of :func:`relucore.train` (a trained outer layer, the output
        scale c, a bias per neuron), with the same meanings and defaults.
    output_bias, reduction, sample_weight
        The loss options of :func:`relucore.train` (an output bias, the square loss's
        reduction, per-example weights), with the same meanings and defaults.
    progress
        the progress bar of :func:`relucore.train` and :func:`relucore.flow` (default False;
        None: only on a terminal).
    """

    signs: Union[Sequence[float], np.ndarray] = (1,)
    init: Union[str, ArrayLike] = "positive"
    eps: Optional[ArrayLike] = None
    eta: Optional[ArrayLike] = None
    steps: Union[int, float] = STEPS
    tol: Optional[float] = None
    record: Union[int, bool] = 0
    rng: Any = None
    n_threads: Optional[int] = None
    engine: str = "auto"
    assignment: Optional[ArrayLike] = None
    init_scale: float = DEFAULT_INIT_SCALE
    C_g: float = C_G
    C_alpha: float = C_ALPHA
    loss: str = "square"
    activation: str = "relu"
    leaky_slope: float = LEAKY_SLOPE
    on_divergence: str = "status"
    train_outer: bool = False
    output_scale: Union[float, str] = 1.0
    bias: bool = False
    output_bias: Optional[float] = None
    reduction: str = "half_sum"
    sample_weight: Optional[ArrayLike] = None
    progress: Optional[bool] = False

    @classmethod
    def from_call(cls, options: Optional["TrainOptions"], values: Mapping[str, Any]) -> "TrainOptions":
        """The options of a call that declares them as keyword parameters.

        Parameters
        ----------
        options : TrainOptions or None
            The call's ``options=``; None starts from the defaults.
        values : mapping of str to object
            The call's parameters by name (its ``locals()``); names that are not fields are
            ignored, and fields the call does not declare keep their default.

        Returns
        -------
        TrainOptions
            Without ``options``, the declared values. With it, ``options`` where a declared
            parameter still holds its default object, and the parameter's value where the caller
            passed another one (a keyword beside ``options`` overrides its field).
        """
        if options is None:
            # The dataclass __init__ of a frozen class sets its fields one object.__setattr__
            # at a time; filling __dict__ directly gives the same object for a fraction of
            # train's fixed cost on a small problem.
            o = object.__new__(cls)
            d = o.__dict__
            try:  # train declares every field: one C-level gather
                d.update(zip(_FIELD_ORDER, _GATHER(values)))
            except KeyError:  # Trainer and flow declare some of them
                d.update(_DEFAULTS)
                d.update({name: values[name] for name in _FIELD_ORDER if name in values})
            return o
        if not isinstance(options, cls):
            raise TypeError(f"options must be a relucore.gd.options.TrainOptions, got {type(options).__name__}")
        given = {name: values[name] for name in _FIELD_ORDER if name in values and values[name] is not _DEFAULTS[name]}
        return dataclasses.replace(options, **given) if given else options

    @classmethod
    def collect(cls, caller: str, options: Optional["TrainOptions"], kwargs: Mapping[str, Any]) -> "TrainOptions":
        """``options`` (or the defaults) updated by keyword arguments, refusing unknown names like Python does.

        Parameters
        ----------
        caller : str
            The name of the calling function, for the TypeError of an unknown keyword.
        options : TrainOptions or None
            The starting options; None starts from the defaults.
        kwargs : mapping of str to object
            Options to override, by field name.

        Returns
        -------
        TrainOptions
            The combined options (``options`` itself when ``kwargs`` is empty).
        """
        for key in kwargs:
            if key not in _FIELD_NAMES:
                raise TypeError(f"{caller}() got an unexpected keyword argument {key!r}")
        if options is None:
            # The dataclass __init__ of a frozen class sets its fields one object.__setattr__
            # at a time; filling __dict__ directly gives the same object for a fraction of
            # train's fixed cost on a small problem.
            o = object.__new__(cls)
            o.__dict__.update(_DEFAULTS)
            o.__dict__.update(kwargs)
            return o
        if not isinstance(options, cls):
            raise TypeError(f"options must be a relucore.gd.options.TrainOptions, got {type(options).__name__}")
        return dataclasses.replace(options, **kwargs) if kwargs else options

    def subset(self, names) -> Dict[str, Any]:
        """Some of the options as a dict.

        Parameters
        ----------
        names : iterable of str
            Field names.

        Returns
        -------
        dict
            ``{name: value}`` for each name, in the order given.
        """
        return {name: getattr(self, name) for name in names}


_FIELD_ORDER = tuple(f.name for f in dataclasses.fields(TrainOptions))
_FIELD_NAMES = frozenset(_FIELD_ORDER)
_GATHER = operator.itemgetter(*_FIELD_ORDER)
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(TrainOptions)}
