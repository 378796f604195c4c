"""One vocabulary: docs/vocabulary.md is the reference of every keyword of the GD and sweep calls.

The table lists, per name, its meaning, type, default and the calls (and sweep grid and TOML keys)
that take it. This test reads the table and walks the public signatures (``inspect.signature``
of the GD, sweep, sampling and analysis calls and ``experiments.run``; the grid keys from
``relucore.sweeps.config.DEFAULTS``, the TOML keys from ``relucore.cli.sweep.FILE_KEYS``) and fails
when

- a call takes a keyword the table does not list for it, or the table lists one the call does not take;
- a name has two rows (two meanings);
- a call's default differs from the table's, or a default or annotation is not of the table's type;
- a 0.x name (``relucore._renamed``) is still a keyword.

The checker is also run on deliberately inconsistent signatures, which it must reject.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import os
import re
from pathlib import Path

import numpy as np
import pytest

import relucore
from relucore import experiments, meanfield
from relucore._renamed import RENAMED_FILE_KEYS, RENAMED_KEYWORDS
from relucore.cli.sweep import FILE_KEYS
from relucore.sweeps.config import DEFAULTS

TABLE = Path(__file__).resolve().parents[2] / "docs" / "vocabulary.md"
REQUIRED = "required"
UNCHECKED = "—"


@dataclasses.dataclass
class Row:
    meaning: str
    kinds: frozenset
    default: dict  # call -> default text (REQUIRED, UNCHECKED or a literal)
    where: frozenset


def _split_cells(line: str):
    # "|" inside a cell is written "\|"
    cells = re.split(r"(?<!\\)\|", line.strip().strip("|"))
    return [c.strip().replace("\\|", "|") for c in cells]


def read_table(text: str):
    """{name: Row} from the Markdown table of docs/vocabulary.md (a name with two rows is an error)."""
    rows, problems = {}, []
    lines = [ln for ln in text.splitlines() if ln.startswith("| `")]
    assert lines, "no table rows found"
    for line in lines:
        name_cell, meaning, kind, default, where = _split_cells(line)
        where_set = frozenset(w.strip() for w in where.split(","))
        kinds = frozenset(k.strip() for k in kind.split("|"))
        defaults = {}
        for part in default.split(";"):
            part = part.strip()
            calls, sep, value = part.partition(": ")
            if sep:
                defaults.update({c.strip(): value.strip() for c in calls.split(",")})
            else:
                defaults.update({c: part for c in where_set})
        for name in re.findall(r"`([^`]+)`", name_cell):
            if name in rows:
                problems.append(f"{name}: two rows (one name, two meanings?)")
            rows[name] = Row(meaning, kinds, defaults, where_set)
    return rows, problems


def _literal(text: str):
    return eval(text, {"__builtins__": {}}, {"sqrt": math.sqrt, "inf": math.inf, "None": None})  # noqa: S307


#: What each kind of the table admits as a default value.
_ADMITS = {
    "int": (int,),
    "float": (float, int),
    "bool": (bool,),
    "str": (str,),
    "array": (tuple, list, np.ndarray),
    "None": (type(None),),
    "list": (list,),
    "dict": (dict,),
    "path": (str, os.PathLike),
}
#: Annotation names and the table kind each means.
_ANNOTATION_KINDS = {
    "int": "int",
    "float": "float",
    "bool": "bool",
    "str": "str",
    "Optional": "None",
    "Sequence": "array",
    "ndarray": "array",
    "Callable": "callable",
    "Executor": "Executor",
    "TrainOptions": "TrainOptions",
}


def _admitted(kinds) -> tuple:
    out = ()
    for k in kinds:
        out += _ADMITS.get(k, ())
        if k.startswith('"'):
            out += (str,)
    return out


def _annotation_kinds(annotation: str):
    text = re.sub(r"(Sequence|Dict|List|Tuple)\[[^\[\]]*\]", r"\1", annotation)
    names = {n.rsplit(".", 1)[-1] for n in re.findall(r"[A-Za-z_][\w.]*", text)}
    return {_ANNOTATION_KINDS[n] for n in names if n in _ANNOTATION_KINDS}


def _params(fn, extra=None):
    """{keyword: inspect.Parameter} of a call (without self and **kwargs, plus ``extra``)."""
    out = {}
    for p in inspect.signature(fn).parameters.values():
        if p.name != "self" and p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            out[p.name] = p
    out.update(extra or {})
    return out


def public_calls():
    """{call name in the table: {keyword: Parameter}} of the covered public calls."""
    return {
        "train": _params(relucore.train),
        "Trainer": _params(relucore.Trainer),
        "Trainer.run": _params(relucore.Trainer.run),
        "flow": _params(relucore.flow),
        "minnorm": _params(relucore.minnorm),
        "meanfield.train": _params(meanfield.train),
        "sweep": _params(relucore.sweep),
        "threshold": _params(relucore.threshold),
        "sample": _params(relucore.sample),
        "sample_gram": _params(relucore.sample_gram),
        "sample_gram_batch": _params(relucore.sample_gram_batch),
        "check_limit": _params(relucore.check_limit),
        "regimes": _params(relucore.regimes),
        "training_metrics": _params(relucore.training_metrics),
        "verify": _params(relucore.verify),
        "predicted_limit": _params(relucore.predicted_limit),
        "gram_stats": _params(relucore.gram_stats),
        "meanfield.analyze": _params(meanfield.analyze),
        "experiments.run": _params(experiments.run),
    }


def _keys(keys, defaults=None):
    P = inspect.Parameter
    return {k: P(k, P.KEYWORD_ONLY, default=(defaults or {}).get(k, P.empty)) for k in keys}


def covered():
    calls = public_calls()
    calls["grid"] = _keys(DEFAULTS, DEFAULTS)
    calls["TOML"] = _keys(FILE_KEYS)
    return calls


def check(rows, calls):
    """Every inconsistency between the table ``rows`` and ``calls``, as messages (empty: consistent)."""
    problems = []
    for call, params in calls.items():
        listed = {name for name, row in rows.items() if call in row.where}
        for name in sorted(set(params) - listed):
            problems.append(f"{call}: keyword {name!r} is not in the table for {call}")
        for name in sorted(listed - set(params)):
            problems.append(f"{call}: the table lists {name!r}, which {call} does not take")
        for name in sorted(set(params) & listed):
            problems += _check_param(call, params[name], rows[name])
        for old in RENAMED_KEYWORDS.get(call, {}):
            if old in params:
                problems.append(f"{call}: the 0.x keyword {old!r} is still a keyword")
    return problems


def _check_param(call, p, row):
    problems = []
    stated = row.default.get(call, UNCHECKED)
    has = p.default is not inspect.Parameter.empty
    if stated == REQUIRED:
        if has and call not in ("grid", "TOML"):
            problems.append(f"{call}({p.name}=): the table says required, the call has default {p.default!r}")
    elif stated != UNCHECKED and call != "TOML":
        want = _literal(stated)
        if not has:
            problems.append(f"{call}({p.name}=): no default, the table says {stated}")
        elif not _same(p.default, want):
            problems.append(f"{call}({p.name}=): default {p.default!r}, the table says {stated}")
    if has and p.default is not None and not isinstance(p.default, _admitted(row.kinds)):
        problems.append(f"{call}({p.name}=): default {p.default!r} is not of the table's type {sorted(row.kinds)}")
    if isinstance(p.annotation, str):
        kinds = _annotation_kinds(p.annotation)
        wanted = set(row.kinds) | ({"str"} if any(k.startswith('"') for k in row.kinds) else set())
        if not kinds <= wanted:
            problems.append(f"{call}({p.name}: {p.annotation}): {sorted(kinds - wanted)} not in the table's type")
    return problems


def _same(a, b) -> bool:
    """Equal values of the same kind (a tuple default equals a list or tuple literal; 1 is not 1.0 or True)."""
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return list(a) == list(b)
    return type(a) is type(b) and a == b


@pytest.fixture(scope="module")
def table():
    rows, problems = read_table(TABLE.read_text(encoding="utf-8"))
    assert not problems, problems
    return rows


def test_every_public_keyword_is_in_the_table_with_its_default_and_type(table):
    problems = check(table, covered())
    assert not problems, "\n".join(problems)


def test_the_table_covers_every_call_it_names(table):
    names = set().union(*(row.where for row in table.values()))
    assert names == set(covered()), names ^ set(covered())


def test_old_names_are_not_keywords_and_seed_is_only_the_stored_column(table):
    """The one deliberate difference: the sweep's rng is stored (column, store record) as ``seed``."""
    every = set().union(*(set(params) for params in covered().values()))
    assert "seed" not in every and "seed" not in table
    assert not set(RENAMED_FILE_KEYS) & set(FILE_KEYS)
    t = relucore.sweep({"n": 4, "d": 20}, trials=1, rng=0, progress=False)
    assert "seed" in t.columns and t["seed"][0].startswith("SeedSequence(entropy=0,")


# --- the checker must be able to fail -------------------------------------------------------


def _with(calls, name, fn, extra=None):
    out = dict(calls)
    out[name] = _params(fn, extra)
    return out


def test_a_keyword_with_another_meaning_is_caught(table):
    """minnorm taking tol again (a solver tolerance, not train's gradient threshold) is refused."""

    def minnorm(X=None, y=None, *, signs=(1,), gram=None, method="bnb", max_nodes=5000, assignment=None,
                tol=1e-10, time_limit=60.0, progress=None):  # fmt: skip
        pass

    problems = check(table, _with(covered(), "minnorm", minnorm))
    assert "minnorm: keyword 'tol' is not in the table for minnorm" in problems
    assert "minnorm: the table lists 'solver_tol', which minnorm does not take" in problems
    assert "minnorm: the 0.x keyword 'tol' is still a keyword" in problems


def test_a_different_default_or_type_is_caught(table):
    base = _params(meanfield.train)
    P = inspect.Parameter
    bad = dict(base)
    bad["reduction"] = P("reduction", P.KEYWORD_ONLY, default="half_sum")  # meanfield's default is "mean"
    bad["m"] = P("m", P.KEYWORD_ONLY, default=1000, annotation="str")  # a width as a str
    bad["steps"] = P("steps", P.KEYWORD_ONLY, default=[1])  # a list where an int is meant
    calls = dict(covered(), **{"meanfield.train": bad})
    problems = check(table, calls)
    assert "meanfield.train(reduction=): default 'half_sum', the table says \"mean\"" in problems
    assert "meanfield.train(m: str): ['str'] not in the table's type" in problems
    assert any(p.startswith("meanfield.train(steps=): default [1] is not of the table's type") for p in problems)


def test_a_0x_name_back_in_a_signature_is_caught(table):
    def train(X, y, *, N=1000, **rest):  # the 0.x width of meanfield.train
        pass

    problems = check(table, _with(covered(), "meanfield.train", train, {k: v for k, v in
                                  _params(meanfield.train).items() if k not in ("X", "y", "m")}))  # fmt: skip
    assert "meanfield.train: keyword 'N' is not in the table for meanfield.train" in problems
    assert "meanfield.train: the 0.x keyword 'N' is still a keyword" in problems


def test_two_rows_for_one_name_are_caught():
    text = (
        "| `tol` | gradient threshold | float \\| None | None | train |\n"
        "| `tol` | solver tolerance | float | 1e-10 | minnorm |\n"
    )
    _, problems = read_table(text)
    assert problems == ["tol: two rows (one name, two meanings?)"]


def test_the_table_is_in_the_guide():
    index = (TABLE.parent / "guide" / "index.md").read_text(encoding="utf-8")
    assert "/vocabulary" in index
