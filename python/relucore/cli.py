"""The ``relucore`` console script.

Subcommands register themselves through :data:`SUBCOMMANDS`: each entry maps a
name to ``(add_arguments, run)`` where ``add_arguments(parser)`` declares its
options and ``run(args) -> int`` executes it.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable, Dict, List, Optional, Tuple


def _demo_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--n", type=int, default=10, help="number of examples (default 10)")
    p.add_argument("--d", type=int, default=2000, help="dimension (default 2000)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")


def _demo_run(args: argparse.Namespace) -> int:
    from relucore._demo import demo

    print("\n".join(demo(n=args.n, d=args.d, seed=args.seed)))
    return 0


def _sweep_args(p: argparse.ArgumentParser) -> None:
    from relucore._sweep_cli import add_arguments

    add_arguments(p)


def _sweep_run(args: argparse.Namespace) -> int:
    from relucore._sweep_cli import main as sweep_main

    return sweep_main(args)


SUBCOMMANDS: Dict[str, Tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]] = {
    "demo": ("run the paper's Figure 4 setting and print a table", _demo_args, _demo_run),
    "sweep": ("run a Monte-Carlo sweep described in a TOML file (resumable, batched)", _sweep_args, _sweep_run),
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
    return SUBCOMMANDS[args.command][2](args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
