"""The ``relucore`` console script.

Subcommands register themselves through ``SUBCOMMANDS``: each entry maps a
name to ``(add_arguments, run)`` where ``add_arguments(parser)`` declares its
options and ``run(args) -> int`` executes it.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Callable, Dict, List, Optional, Tuple


class _RenamedOption(argparse.Action):
    """A 0.x option (``relucore._renamed.RENAMED_CLI_OPTIONS``): refused with the one-line error naming its new name."""

    def __call__(self, parser, namespace, values, option_string=None):
        from relucore._renamed import RENAMED_CLI_OPTIONS

        parser.error(f"{option_string} was renamed in 1.0: use {RENAMED_CLI_OPTIONS[option_string]}")


def _refuse_renamed_options(p: argparse.ArgumentParser) -> None:
    from relucore._renamed import RENAMED_CLI_OPTIONS

    for old in RENAMED_CLI_OPTIONS:
        p.add_argument(old, action=_RenamedOption, help=argparse.SUPPRESS)


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n", type=int, default=10, help="number of examples (default 10)")
    p.add_argument("--d", type=int, default=2000, help="dimension (default 2000)")
    p.add_argument("--rng", type=int, default=0, help="the random seed, an int (default 0)")
    _refuse_renamed_options(p)


def _demo_run(args: argparse.Namespace) -> int:
    from relucore.cli.demo import demo

    print("\n".join(demo(n=args.n, d=args.d, rng=args.rng)))
    return 0


def _sweep_args(p: argparse.ArgumentParser) -> None:
    from relucore.cli.sweep import add_arguments

    add_arguments(p)


def _sweep_run(args: argparse.Namespace) -> int:
    from relucore.cli.sweep import main as sweep_main

    return sweep_main(args)


def _reproduce_args(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "names", nargs="*", default=["all"], metavar="NAME", help="experiments to run (default: all); see --list"
    )
    p.add_argument("--quick", action="store_true", help="small settings (all experiments in under two minutes)")
    p.add_argument(
        "--out",
        default="reproduce-out",
        metavar="DIR",
        help="directory for NAME.csv / NAME.json / NAME.png and summary.{txt,json} (default reproduce-out)",
    )
    p.add_argument("--rng", type=int, default=0, help="the random seed passed to every experiment, an int (default 0)")
    _refuse_renamed_options(p)
    p.add_argument("--list", action="store_true", help="list the registered experiments and exit")
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when a claim fails (default: a failed claim is reported, exit status 0)",
    )
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.epilog = (
        "Exit status: 0 when every experiment ran (failed claims are measurements on random data and are "
        "printed as FAIL), 1 when an experiment raised (or, with --strict, a claim failed), 2 on bad usage."
    )


def _claims_printer(header: str) -> Callable[[dict], None]:
    """Callback printing each experiment's claims on stdout as soon as it finished, flushed.

    Lines go above any progress bar; ``header`` precedes the first experiment.
    """
    from tqdm.auto import tqdm

    from relucore import experiments
    from relucore.experiments.reproduce import format_record

    col = max([14] + [len(n) for n in experiments.names()])
    pending = [header + "\n"]

    def on_result(record: dict) -> None:
        tqdm.write("".join(pending) + format_record(record, col=col), file=sys.stdout)
        pending.clear()
        sys.stdout.flush()

    return on_result


def _reproduce_run(args: argparse.Namespace) -> int:
    from relucore.experiments.reproduce import (
        format_header,
        format_list,
        format_totals,
        missing_extras,
        reproduce,
    )

    if args.list:
        print(format_list())
        return 0
    missing = missing_extras()
    if missing:
        print(
            f"relucore reproduce: error: the experiments need the optional extras {', '.join(missing)}; "
            f"install them with: pip install 'relucore[{','.join(missing)}]'",
            file=sys.stderr,
        )
        return 2
    try:
        with warnings.catch_warnings(record=True) as caught:
            # relucore's own deprecations (an old experiment name) are shown to the user, once each.
            warnings.filterwarnings("always", category=DeprecationWarning, module=r"relucore\.")
            try:
                records = reproduce(
                    args.names,
                    quick=args.quick,
                    out=args.out,
                    rng=args.rng,
                    progress=False if args.no_progress else None,
                    on_result=_claims_printer(format_header(quick=args.quick, rng=args.rng)),
                )
            finally:
                for w in caught:
                    print(f"relucore reproduce: warning: {w.message}", file=sys.stderr)
    except ValueError as exc:
        print(f"relucore reproduce: error: {exc}", file=sys.stderr)
        return 2
    print(format_totals(records))
    print(f"outputs in {args.out}/ (all claims again in summary.txt)", flush=True)
    if any(r["error"] is not None for r in records):
        for r in records:
            if r["error"] is not None:
                print(f"\n--- {r['name']} raised ---\n{r['traceback']}", file=sys.stderr)
        return 1
    if args.strict and any(not c["passed"] for r in records for c in r["claims"]):
        return 1
    return 0


SUBCOMMANDS: Dict[str, Tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {
    "demo": ("run the paper's Figure 4 setting and print a table", _demo_args, _demo_run),
    "sweep": ("run a Monte-Carlo sweep described in a TOML file (resumable, batched)", _sweep_args, _sweep_run),
    "reproduce": (
        "run the papers' experiments, save tables and figures, check their claims",
        _reproduce_args,
        _reproduce_run,
    ),
}


def build_parser() -> argparse.ArgumentParser:
    from relucore import __version__

    parser = argparse.ArgumentParser(prog="relucore", description="Gradient descent on shallow ReLU networks.")
    parser.add_argument("--version", action="version", version=f"relucore {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, (help_text, add_args, _) in SUBCOMMANDS.items():
        add_args(sub.add_parser(name, help=help_text, description=help_text))
    return parser


def main(argv: Optional[List[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        return SUBCOMMANDS[args.command][2](args)
    except KeyboardInterrupt:  # Ctrl-C: one line, not a traceback (exit status 128 + SIGINT)
        print(f"relucore {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
