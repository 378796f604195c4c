"""The options of a GD run, listed once: :class:`TrainOptions`.

:func:`relucore.train`, :class:`relucore.Trainer`, :func:`~relucore.gd.prepare.prepare` and the
sweeps' trials take the same keyword options; each builds one ``TrainOptions`` with
:meth:`TrainOptions.collect` and their signatures are generated from its fields
(:func:`with_options_signature`), so a new option is added here and nowhere else.
The meaning of each option is documented in :func:`relucore.train`.
"""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any, Dict, Mapping, Optional, Sequence, Union

import numpy as np

from relucore.gd.defaults import C_ALPHA, C_G, DEFAULT_INIT_SCALE, LEAKY_SLOPE, STEPS

__all__ = ["TrainOptions", "with_options_signature"]


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

    signs: Sequence[float] = (1,)
    init: Union[str, np.ndarray] = "positive"
    eps: Any = None
    eta: Any = None
    steps: int = STEPS
    tol: Optional[float] = None
    record: int = 0
    rng: Any = None
    n_threads: Optional[int] = None
    engine: str = "auto"
    assignment: Any = None
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
    sample_weight: Any = None
    progress: Optional[bool] = False

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


_FIELD_NAMES = frozenset(f.name for f in dataclasses.fields(TrainOptions))
_DEFAULTS = {f.name: f.default for f in dataclasses.fields(TrainOptions)}


def with_options_signature(*, data=("X", "y"), keyword_data=("gram",), exclude=(), method=False):
    """Decorator: the function's signature becomes ``(X=None, y=None, *, gram=None, <options>, options=None)``.

    ``help()`` and :func:`inspect.signature` then list every option with its default,
    although the function itself takes ``**kwargs``. ``method=True`` for ``__init__``.
    """

    def decorate(fn):
        P = inspect.Parameter
        params = [P("self", P.POSITIONAL_OR_KEYWORD)] if method else []
        params += [P(name, P.POSITIONAL_OR_KEYWORD, default=None) for name in data]
        params += [P(name, P.KEYWORD_ONLY, default=None) for name in keyword_data]
        params += [
            P(f.name, P.KEYWORD_ONLY, default=f.default)
            for f in dataclasses.fields(TrainOptions)
            if f.name not in exclude
        ]
        params.append(P("options", P.KEYWORD_ONLY, default=None))
        fn.__signature__ = inspect.Signature(params)
        return fn

    return decorate
