"""``relucore reproduce``: run registered experiments, save their outputs, report their claims.

A claim that fails is a measurement, not an error: it is printed as FAIL in
the summary and recorded in ``summary.json``, and the exit status stays 0
(``--strict`` makes it 1). An experiment that raises is reported with its
error, the others still run, and the exit status is 1.

Results stream: each experiment's files and the summary so far are written as
soon as it finishes, and ``on_result`` (the CLI prints the claims there) is
called with its record before the next one starts.
"""

from __future__ import annotations

import json
import os
import shutil
import textwrap
import time
import traceback
from typing import Callable, Dict, List, Optional, Sequence

__all__ = ["reproduce", "format_summary", "format_record", "format_list"]


def _resolve(names: Sequence[str]) -> List[str]:
    from relucore import experiments

    known = experiments.names()
    if not names or list(names) == ["all"]:
        return known
    out = []
    for name in names:
        if name == "all":
            out.extend(n for n in known if n not in out)
            continue
        try:
            name = experiments._base.resolve(name)
        except ValueError as exc:  # resolve's message lists the known names, or names the new spelling
            raise ValueError(f"{exc}" + ("" if "hyphenated" in str(exc) else " (or 'all')")) from None
        if name not in out:
            out.append(name)
    return out


def format_list(width: Optional[int] = None) -> str:
    """The registered experiments as a two-column table, descriptions wrapped to ``width``.

    ``width`` defaults to the terminal's (``shutil.get_terminal_size``). Names are
    never broken; each description starts in the same column and its continuation
    lines are indented to it.
    """
    from relucore import experiments

    names = experiments.names()
    width = shutil.get_terminal_size().columns if width is None else width
    col = max(map(len, names)) + 2
    text_width = max(width - col - 1, 30)  # one column spare: a full line would wrap on some terminals
    lines = []
    for name in names:
        wrapped = textwrap.wrap(experiments._base.summary(name), text_width, break_on_hyphens=False) or [""]
        lines.append(name.ljust(col) + wrapped[0])
        lines.extend(" " * col + part for part in wrapped[1:])
    return "\n".join(lines)


#: Optional modules the experiments need, with the extra that installs each.
REQUIRED_EXTRAS = (("matplotlib", "plots"), ("sklearn", "meanfield"))


def missing_extras() -> List[str]:
    """Extras (``plots``, ``meanfield``) whose modules are not importable here."""
    import importlib.util

    return [extra for module, extra in REQUIRED_EXTRAS if importlib.util.find_spec(module) is None]


def reproduce(
    names: Sequence[str] = ("all",),
    *,
    quick: bool = False,
    out: Optional[str] = "reproduce-out",
    rng: int = 0,
    progress: Optional[bool] = None,
    on_result: Optional[Callable[[Dict], None]] = None,
) -> List[Dict]:
    """Runs experiments and saves each one's table (CSV), parameters and claims (JSON) and figure (PNG).

    Parameters
    ----------
    names : sequence of str
        Registered experiment names, or ``("all",)``.
    quick : bool
        Use each experiment's quick settings.
    out : str or None
        Output directory (None: save nothing).
    rng : int
        Seed passed to every experiment.
    progress : bool or None
        Progress bars on stderr, over the experiments and within each one
        (None: only when stderr is a terminal).
    on_result : callable or None
        Called with each experiment's record as soon as it finishes (after its
        files are written), before the next experiment starts.

    Returns
    -------
    list of dict
        One record per experiment: ``name``, ``seconds``, ``claims`` (list of
        dicts), ``files`` and ``error`` (None or the exception text).
    """
    from tqdm.auto import tqdm

    from relucore import experiments
    from relucore.experiments._progress import show_progress

    todo = _resolve(names)
    records: List[Dict] = []
    show = show_progress(progress)
    # No time estimate: the experiments' durations differ by two orders of magnitude.
    bar = tqdm(
        todo,
        desc="reproduce",
        unit="exp",
        disable=not show,
        bar_format="{desc}: {n_fmt}/{total_fmt} [{elapsed}]{postfix}",
    )
    for name in bar:
        bar.set_postfix_str(name)
        t0 = time.perf_counter()
        rec: Dict = dict(name=name, summary=experiments._base.summary(name), claims=[], files=[], error=None)
        try:
            result = experiments.run(name, quick=quick, rng=rng, progress=show)
            rec["claims"] = [
                dict(name=c.name, expected=c.expected, measured=c.measured, passed=c.passed) for c in result.claims
            ]
            if out is not None:
                rec["files"] = result.save(out)
            if result.figure is not None:
                from relucore.plots._style import pyplot

                pyplot().close(result.figure)
        except Exception as exc:  # one failing experiment must not stop the others
            rec["error"] = f"{type(exc).__name__}: {exc}"
            rec["traceback"] = traceback.format_exc()
        rec["seconds"] = time.perf_counter() - t0
        records.append(rec)
        if out is not None:
            _write_summary(out, records, quick=quick, rng=rng)
        if on_result is not None:
            on_result(rec)
    bar.close()
    if out is not None and not records:
        _write_summary(out, records, quick=quick, rng=rng)
    return records


def _write_summary(out: str, records: List[Dict], *, quick: bool, rng: int) -> None:
    """``summary.json`` and ``summary.txt`` for the experiments run so far."""
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "summary.json"), "w") as fh:
        json.dump(
            dict(
                quick=quick,
                rng=rng,
                experiments=[{k: v for k, v in r.items() if k != "traceback"} for r in records],
            ),
            fh,
            indent=2,
        )
    with open(os.path.join(out, "summary.txt"), "w") as fh:
        fh.write(format_summary(records, quick=quick, rng=rng) + "\n")


def format_header(*, quick: bool = False, rng: int = 0) -> str:
    """First line of the report: the settings and the rng."""
    return f"relucore reproduce ({'quick' if quick else 'full'} settings, rng {rng})"


def format_record(r: Dict, *, col: int = 14, width: int = 100) -> str:
    """One experiment's block of the report: its time, then each claim (PASS/FAIL, expected, measured)."""
    if r["error"] is not None:
        return f"{r['name']:<{col}} ERROR after {r['seconds']:.1f} s: {r['error']}\n"
    wrap = dict(width=width, initial_indent="", subsequent_indent=" " * 16)
    ok = sum(c["passed"] for c in r["claims"])
    lines = [f"{r['name']:<{col}} {r['seconds']:6.1f} s  {ok}/{len(r['claims'])} claims hold  -- {r['summary']}"]
    for c in r["claims"]:
        lines.append(f"  {'PASS' if c['passed'] else 'FAIL'} {c['name']}")
        lines.append(textwrap.fill("      expected: " + c["expected"], **wrap))
        lines.append(textwrap.fill("      measured: " + c["measured"], **wrap))
    lines.append("")
    return "\n".join(lines)


def format_totals(records: List[Dict]) -> str:
    """Last lines of the report: counts of experiments and claims, and the failed claims."""
    n_claims = sum(len(r["claims"]) for r in records if r["error"] is None)
    n_pass = sum(c["passed"] for r in records if r["error"] is None for c in r["claims"])
    n_err = sum(r["error"] is not None for r in records)
    total = sum(r["seconds"] for r in records)
    lines = [
        f"{len(records)} experiments in {total:.1f} s: {n_pass}/{n_claims} claims hold, "
        f"{n_claims - n_pass} failed, {n_err} experiments raised"
    ]
    if n_claims - n_pass:
        failed = [f"{r['name']}:{c['name']}" for r in records for c in r["claims"] if not c["passed"]]
        lines.append("failed claims (measurements on random data, not crashes): " + ", ".join(failed))
    return "\n".join(lines)


def format_summary(records: List[Dict], *, quick: bool = False, rng: int = 0, width: int = 100) -> str:
    """Human-readable report: per experiment and claim, what was expected and what was measured."""
    col = max([14] + [len(r["name"]) for r in records])
    lines = [format_header(quick=quick, rng=rng), ""]
    lines += [format_record(r, col=col, width=width) for r in records]
    lines.append(format_totals(records))
    return "\n".join(lines)
