"""Registry, result and claim types shared by all experiments."""

from __future__ import annotations

import csv
import dataclasses
import functools
import inspect
import json
import os
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from relucore._renamed import removed_parameters
from relucore._summary import summarized
from relucore.experiments._progress import progress_bar

__all__ = ["Claim", "Context", "ExperimentResult", "register", "get", "names", "run", "resolve"]


@dataclasses.dataclass(frozen=True)
class Claim:
    """One statement an experiment checks.

    Attributes
    ----------
    name : str
        Short identifier, e.g. ``"slope_n"``.
    expected : str
        What the theory (or the caption) says, in words or numbers.
    measured : str
        What this run measured.
    passed : bool
        Whether the measurement agrees with the expectation.
    """

    name: str
    expected: str
    measured: str
    passed: bool


def _claims_text(claims: List[Claim], batch=None) -> str:
    failed = [c.name for c in claims if not c.passed]
    text = f"{len(claims) - len(failed)} of {len(claims)} hold"
    return text + (f"; failed: {', '.join(failed)}" if failed else "")


def _table_text(table: List[Dict[str, Any]], batch=None) -> str:
    keys: List[str] = []
    for row in table:
        keys.extend(k for k in row if k not in keys)
    return f"{len(table)} rows x {len(keys)} columns" + (f": {', '.join(keys)}" if keys else "")


@summarized(
    title=lambda r: f"{r.name!r}, {'every claim holds' if r.passed else 'some claims fail'}",
    rows=("claims", "table", "params", "figure", "data"),
    formats={"claims": _claims_text, "table": _table_text},
)
@dataclasses.dataclass
class ExperimentResult:
    """Outcome of one experiment.

    Attributes
    ----------
    name : str
        Registry name of the experiment.
    params : dict
        The parameters it ran with (after ``quick`` was applied).
    table : list of dict
        One row per measured point; saved as CSV.
    claims : list of Claim
        The checks the experiment made.
    figure : matplotlib.figure.Figure or None
        Its figure, saved as PNG.
    data : dict
        Anything else a caller may want (arrays, results); not saved.
    """

    name: str
    params: Dict[str, Any]
    table: List[Dict[str, Any]]
    claims: List[Claim]
    figure: Any = None
    data: Dict[str, Any] = dataclasses.field(default_factory=dict)

    @property
    def passed(self) -> bool:
        """True when every claim held."""
        return all(c.passed for c in self.claims)

    def save(self, out_dir: str | os.PathLike) -> List[str]:
        """Writes ``NAME.csv``, ``NAME.json`` (params and claims) and ``NAME.png``.

        Parameters
        ----------
        out_dir : str or os.PathLike
            The folder (created when missing).

        Returns
        -------
        list of str
            The paths written (no CSV without a table, no PNG without a figure).
        """
        os.makedirs(out_dir, exist_ok=True)
        written = []
        if self.table:
            path = os.path.join(out_dir, f"{self.name}.csv")
            keys: List[str] = []
            for row in self.table:
                keys.extend(k for k in row if k not in keys)
            with open(path, "w", newline="") as fh:
                writer = csv.DictWriter(fh, fieldnames=keys)
                writer.writeheader()
                writer.writerows(self.table)
            written.append(path)
        path = os.path.join(out_dir, f"{self.name}.json")
        with open(path, "w") as fh:
            json.dump(
                {
                    "name": self.name,
                    "params": _jsonable(self.params),
                    "claims": [dataclasses.asdict(c) for c in self.claims],
                    "passed": self.passed,
                },
                fh,
                indent=2,
            )
        written.append(path)
        if self.figure is not None:
            path = os.path.join(out_dir, f"{self.name}.png")
            self.figure.savefig(path, dpi=120, bbox_inches="tight")
            written.append(path)
        return written


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return repr(value)


@dataclasses.dataclass(frozen=True)
class Context:
    """The settings every experiment takes besides its own parameters, handed to it by :func:`register`.

    Attributes
    ----------
    name : str
        The registered name (the progress bar's label, the result's name).
    quick : bool
        The fast settings used by the tests and ``relucore reproduce --quick``.
    rng : int
        The base seed of the experiment's trials (an int: the experiments derive their streams from it).
    progress : bool or None
        Show a progress bar; None shows one only when stderr is a terminal.
    own : tuple of str
        The experiment's own parameter names, in the order of its signature.
    """

    name: str
    quick: bool = False
    rng: int = 0
    progress: Optional[bool] = None
    own: Tuple[str, ...] = ()

    def bar(self, total: int, unit: str = "it"):
        """A progress bar labelled with the experiment's name.

        Parameters
        ----------
        total : int
            The units of work (seeds, configurations, stages) it counts.
        unit : str, default "it"
            Their name.

        Returns
        -------
        tqdm.tqdm
            The bar (a silent one when ``progress`` says so).
        """
        return progress_bar(self.progress, self.name, total, unit=unit)

    def params(self, values: Mapping[str, Any], *last: str, **override: Any) -> Dict[str, Any]:
        """The ``params`` record of the result, built from the experiment's own parameters.

        Parameters
        ----------
        values : mapping
            The experiment's ``locals()``: its parameters as they stand (``quick`` applied).
        *last : str
            ``"rng"``, ``"quick"`` or own parameter names, recorded after the other own
            parameters in this order (an experiment whose seed is unused leaves it out).
        **override
            Values recorded instead of a parameter's (in its place), or added at the end.

        Returns
        -------
        dict
            The own parameters in signature order, then ``last``, then the added keys.
        """
        common = {"rng": self.rng, "quick": self.quick}
        out = {k: values[k] for k in self.own if k not in last}
        out.update((k, common[k] if k in common else values[k]) for k in last)
        out.update(override)
        return out


#: The settings :class:`Context` carries (its fields after ``name``, before ``own``), as the
#: keyword parameters every experiment's signature ends with; their defaults are Context's.
_CONTEXT_PARAMETERS = tuple(
    inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default, annotation=f.type)
    for f in dataclasses.fields(Context)
    if f.name not in ("name", "own")
)


def with_context(name: str, body: Callable[..., ExperimentResult]) -> Callable[..., ExperimentResult]:
    """The experiment function of ``body(ctx, *, <own parameters>)``.

    It takes ``body``'s own parameters and ``quick``, ``rng``, ``progress`` as keyword
    arguments (its signature lists them all) and calls ``body`` with a :class:`Context`.
    """
    own = list(inspect.signature(body).parameters.values())[1:]
    names = tuple(p.name for p in own)

    @functools.wraps(body)
    def experiment(**params: Any) -> ExperimentResult:
        settings = {p.name: params.pop(p.name) for p in _CONTEXT_PARAMETERS if p.name in params}
        return body(Context(name, own=names, **settings), **params)

    experiment.__signature__ = inspect.Signature(own + list(_CONTEXT_PARAMETERS), return_annotation="ExperimentResult")
    return experiment


def _takes_context(func: Callable) -> bool:
    params = list(inspect.signature(func).parameters.values())
    return bool(params) and params[0].kind in (
        inspect.Parameter.POSITIONAL_ONLY,
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
    )


@dataclasses.dataclass(frozen=True)
class _Entry:
    name: str
    func: Callable[..., ExperimentResult]
    summary: str


_REGISTRY: Dict[str, _Entry] = {}


def register(
    name: str, summary: str = ""
) -> Callable[[Callable[..., ExperimentResult]], Callable[..., ExperimentResult]]:
    """Decorator adding an experiment function to the registry under ``name``.

    Experiment names are hyphenated (``"kou-stable-rank"``).

    The function takes a :class:`Context` first, then its own parameters as keywords:
    ``def fig(ctx, *, n=10, ...)``. The decorator returns the experiment function,
    whose signature is the own parameters and ``quick``, ``rng``, ``progress``
    (keyword-only, like the own ones). It reports its loop over seeds, configurations or stages
    with ``ctx.bar`` (``progress=None``: only when stderr is a terminal) and records
    ``ctx.params(locals(), ...)``. A function without the leading context parameter
    is registered as it is and must accept those three keywords itself.

    Parameters
    ----------
    name : str
        The hyphenated name (what ``relucore reproduce NAME`` takes).
    summary : str, optional
        One-line description; default the first line of the function's docstring.

    Returns
    -------
    callable
        The decorator, which registers the experiment function and returns it.
    """
    if "_" in name:
        raise ValueError(f"experiment names are hyphenated: {name!r}")

    def deco(func: Callable[..., ExperimentResult]) -> Callable[..., ExperimentResult]:
        if name in _REGISTRY:
            raise ValueError(f"experiment {name!r} is registered twice")
        if _takes_context(func):
            func = with_context(name, func)
        _REGISTRY[name] = _Entry(name, func, summary or (func.__doc__ or "").strip().splitlines()[0])
        return func

    return deco


def resolve(name: str) -> str:
    """The registered name ``name``; an unknown name is a ValueError that lists the known ones
    (and names the hyphenated spelling of an old underscore one, removed in 1.0)."""
    if name in _REGISTRY:
        return name
    hyphenated = name.replace("_", "-")
    if hyphenated in _REGISTRY:
        raise ValueError(
            f"unknown experiment {name!r}: experiment names are hyphenated, use {hyphenated!r} "
            "(the underscore spellings were removed in 1.0)"
        )
    raise ValueError(f"unknown experiment {name!r}; known: {', '.join(_REGISTRY)}")


def names() -> List[str]:
    """Registered experiment names, in registration order.

    Returns
    -------
    list of str
        The names :func:`run` accepts.
    """
    return list(_REGISTRY)


def get(name: str) -> Callable[..., ExperimentResult]:
    """The experiment function registered as ``name``.

    Parameters
    ----------
    name : str
        A registered name.

    Returns
    -------
    callable
        The experiment function, which takes its parameters as keyword arguments.
    """
    return _REGISTRY[resolve(name)].func


def summary(name: str) -> str:
    """One-line description of an experiment."""
    return _REGISTRY[resolve(name)].summary


@removed_parameters("experiments.run")
def run(
    name: str, *, quick: bool = False, rng: int = 0, progress: Optional[bool] = None, **params: Any
) -> ExperimentResult:
    """Runs the experiment ``name`` and returns its result (its ``name`` is the registered one).

    Parameters
    ----------
    name : str
        A registered name (see :func:`names`).
    quick : bool, default False
        The fast settings used by the tests and ``relucore reproduce --quick``.
    rng : int, default 0
        The base seed of the experiment's trials (``relucore reproduce --rng``).
    progress : bool, optional
        Show a progress bar; None shows one only when stderr is a terminal.
    **params
        The experiment's own parameters, overriding its defaults.

    Returns
    -------
    ExperimentResult
        The table, the figure and the claims checked (expected against measured).
    """
    name = resolve(name)
    result = _REGISTRY[name].func(quick=quick, rng=rng, progress=progress, **params)
    result.name = name
    return result
