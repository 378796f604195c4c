#!/usr/bin/env python3
"""Compile cost of each public C++ header: one translation unit per header.

Each TU is ``#include <relucore/HEADER>`` and a trivial ``int main()``,
compiled and linked like a user's file (default: ``g++ -std=c++17 -O3``, with
``-DEIGEN_DONT_PARALLELIZE`` and OpenMP as relucore::core gives them). The
rows report the compiler's CPU time (user + sys of the compiler and its
children) and its peak resident set size, from ``wait4``. ``--use`` adds rows
for TUs that also call the engines (what a simulator compiles).

This is a measurement for
docs/embedding.md, never a CI assertion: timings depend on the machine and its
load, which the output records (``os.getloadavg``).

    python .ci/header_cost.py [--root CHECKOUT] [--cxx g++] [--flags "-O3"] [--use] [--markdown] [HEADER ...]
"""

from __future__ import annotations

import argparse
import os
import pathlib
import platform
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]

#: The start both ``--use`` TUs share: a small problem and a primal-dual engine from the positive start.
_DUAL_GD_START = """
    relucore::RowMatrix X = relucore::RowMatrix::Random(8, 20);
    relucore::Vector y = relucore::Vector::Ones(8);
    relucore::GDSettings st;
    st.eta = 0.01;
    st.max_steps = 100;
    relucore::DualGD::PositiveStart ps;
    ps.outer = relucore::Vector::Ones(2);
    ps.offset = 1e-3;
    relucore::DualGD gd = relucore::DualGD::positive_start(X, y, ps, st);"""

#: TUs that use an engine the way a simulator does (``--use``).
USES = {
    "relucore/gd/dual_gd.hpp + use": (
        "relucore/gd/dual_gd.hpp",
        _DUAL_GD_START
        + """
    gd.step(10);
    return gd.run().nit > 0 ? 0 : 1;""",
    ),
    "relucore/relucore.hpp + use": (
        "relucore/relucore.hpp",
        _DUAL_GD_START
        + """
    relucore::DenseGD::Start ds;
    ds.outer = gd.outer();
    ds.W = gd.alpha() * X;
    ds.alpha = gd.alpha();
    relucore::DenseGD dense(X, y, std::move(ds), st);
    dense.step(10);
    return gd.run().nit > 0 ? 0 : 1;""",
    ),
}


def public_headers(include: pathlib.Path) -> list[str]:
    """Every header under include/relucore, relative to include/."""
    return [p.relative_to(include).as_posix() for p in sorted((include / "relucore").rglob("*.hpp"))]


def measure(cxx: list[str], source: str, workdir: pathlib.Path) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MB) of compiling and linking one TU."""
    src = workdir / "tu.cpp"
    src.write_text(source)
    cmd = cxx + [str(src), "-o", str(workdir / "tu.out")]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out = proc.stdout.read()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.stderr.write(out.decode(errors="replace"))
        raise SystemExit(f"compile failed: {shlex.join(cmd)}")
    # wait4 reports the child and its waited-for descendants (cc1plus, as, ld).
    return usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("headers", nargs="*", help="headers relative to cpp/include (default: all)")
    ap.add_argument("--root", type=pathlib.Path, default=ROOT, help="checkout to measure (default: this one)")
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--flags", default="-O3", help="optimisation and other flags")
    ap.add_argument("--no-openmp", action="store_true", help="compile without -fopenmp")
    ap.add_argument("--use", action="store_true", help="add TUs that call the engines")
    ap.add_argument("--markdown", action="store_true", help="print a markdown table")
    args = ap.parse_args(argv)

    cxx = [args.cxx, "-std=c++17", *shlex.split(args.flags), "-DEIGEN_DONT_PARALLELIZE"]
    if not args.no_openmp:
        cxx += ["-fopenmp", "-DRELUCORE_WITH_OPENMP"]
    include = args.root / "cpp" / "include"
    cxx += ["-I", str(include), "-isystem", str(args.root / "cpp" / "third_party" / "eigen")]
    tus = {h: (h, "\n    return 0;") for h in (args.headers or public_headers(include))}
    if args.use:
        tus.update(USES)
    load = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, (header, body) in tus.items():
            source = f"#include <{header}>\n\n#include <utility>\n\nint main() {{{body}\n}}\n"
            cpu, rss = measure(cxx, source, pathlib.Path(tmp))
            rows.append((name, cpu, rss))
            if not args.markdown:
                print(f"{name:45s} {cpu:7.1f} s {rss:7.0f} MB", flush=True)
    load_end = os.getloadavg()
    compiler = subprocess.run([args.cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    note = (
        f"{compiler}, `{shlex.join(cxx[1:4])}`, {os.cpu_count()} cores ({platform.machine()}); "
        f"load average (1 min) {load[0]:.2f} at the start, {load_end[0]:.2f} at the end"
    )
    if args.markdown:
        print("| translation unit | CPU s | peak RSS MB |")
        print("|---|---:|---:|")
        for name, cpu, rss in rows:
            print(f"| `{name}` | {cpu:.1f} | {rss:.0f} |")
        print()
    print(note)
    return 0


if __name__ == "__main__":
    sys.exit(main())
