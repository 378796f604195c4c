#!/usr/bin/env python3
"""Compile time of the translation units a simulator writes: the dual engine header alone
and the umbrella headers, each with code that constructs and runs an engine.

Each TU is compiled and linked like a user's file (``g++ -std=c++17 -O3 -fopenmp``, the
definitions relucore::core gives it) ``--repeat`` times; a row reports the smallest CPU
time (user + sys of the compiler and its children, so the load of other processes counts
less than in wall time) and the peak resident memory. The note under the table names the
compiler, the CPU model, its widest vector ISA and the load. ``--write`` puts the table
and note into docs/embedding.md between the ``compile-cost`` markers, which is how that
table is made. A measurement, never a CI assertion.

    python bench/bench_compile.py [--cxx g++] [--repeat 3] [--root CHECKOUT] [--write]
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import pathlib
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "embedding.md"
BEGIN, END = "<!-- compile-cost: begin (bench/bench_compile.py --write) -->", "<!-- compile-cost: end -->"


def _header_cost():
    """.ci/header_cost.py, the one home of the compile command and its measurement."""
    spec = importlib.util.spec_from_file_location("header_cost", ROOT / ".ci" / "header_cost.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_START = """
    relucore::RowMatrix X = relucore::RowMatrix::Random(8, 20);
    relucore::Vector y = relucore::Vector::Ones(8);
    relucore::GDSettings st;
    st.eta = 0.01;
    st.max_steps = 100;
    relucore::DualGD::PositiveStart ps;
    ps.outer = relucore::Vector::Ones(2);
    ps.offset = 1e-3;
    relucore::DualGD gd = relucore::DualGD::positive_start(X, y, ps, st);
    gd.step(10);"""

_DENSE = """
    relucore::DenseGD::Start ds;
    ds.outer = gd.outer();
    ds.W = gd.alpha() * X;
    ds.alpha = gd.alpha();
    relucore::DenseGD dense(X, y, std::move(ds), st);
    dense.step(10);"""

#: The reference row: Eigen alone doing the dense linear algebra an engine's start needs (a
#: Cholesky solve and the eigenvalues of a symmetric matrix). The other rows are also given as
#: multiples of it, which moves less with the machine and its load than seconds do.
REFERENCE = (
    "reference: Eigen alone (`<Eigen/Cholesky>`, `<Eigen/Eigenvalues>`), LLT solve + eigenvalues",
    "Eigen/Cholesky Eigen/Eigenvalues",
    """
    Eigen::MatrixXd A = Eigen::MatrixXd::Random(8, 8);
    A = A * A.transpose();
    const Eigen::VectorXd x = A.llt().solve(Eigen::VectorXd::Ones(8));
    const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(A, Eigen::EigenvaluesOnly);
    return x.sum() + es.eigenvalues().sum() > 0 ? 0 : 1;""",
)

#: (row name, headers (space-separated), body of main): what a simulator compiles.
TUS = [
    REFERENCE,
    ("dual engine: `relucore/gd/dual_gd.hpp` + use", "relucore/gd/dual_gd.hpp", _START + "\n    return gd.run().nit > 0 ? 0 : 1;"),
    ("umbrella: `relucore/relucore.hpp` + use", "relucore/relucore.hpp", _START + _DENSE + "\n    return gd.run().nit > 0 ? 0 : 1;"),
    ("analysis umbrella: `relucore/analysis.hpp` + use", "relucore/analysis.hpp", _START + _DENSE + """
    const relucore::MinNorm1Result mn = relucore::minnorm_single_gram(gd.gram(), y, 1.0);
    return gd.run().nit > 0 && mn.objective > 0 ? 0 : 1;"""),
]  # fmt: skip


def cpu_model() -> str:
    """The CPU model and the widest vector ISA it reports (/proc/cpuinfo)."""
    try:
        text = pathlib.Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown CPU"
    model = re.search(r"^model name\s*:\s*(.*)$", text, re.M)
    flags = set((re.search(r"^flags\s*:\s*(.*)$", text, re.M) or re.match("", "")).group(1).split() or [])
    isa = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE2"
    return f"{model.group(1).strip() if model else 'unknown CPU'} ({isa})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cxx", default="g++")
    ap.add_argument("--repeat", type=int, default=3, help="compilations per TU; the fastest counts")
    ap.add_argument("--root", type=pathlib.Path, default=ROOT, help="checkout whose headers to compile")
    ap.add_argument("--write", action="store_true", help="regenerate the table in docs/embedding.md")
    args = ap.parse_args(argv)
    hc = _header_cost()
    include = args.root / "cpp" / "include"
    cxx = [args.cxx, "-std=c++17", "-O3", "-DEIGEN_DONT_PARALLELIZE", "-fopenmp", "-DRELUCORE_WITH_OPENMP"]
    cxx += ["-I", str(include), "-isystem", str(args.root / "cpp" / "third_party" / "eigen")]
    load = os.getloadavg()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, header, body in TUS:
            includes = "".join(f"#include <{h}>\n" for h in header.split())
            source = f"{includes}\n#include <utility>\n\nint main() {{{body}\n}}\n"
            runs = [hc.measure(cxx, source, pathlib.Path(tmp)) for _ in range(args.repeat)]
            cpu = min(r[0] for r in runs)
            rss = max(r[1] for r in runs)
            rows.append((name, cpu, max(r[0] for r in runs), rss))
            print(f"{name:55s} {cpu:6.1f} s (slowest {rows[-1][2]:.1f} s) {rss:6.0f} MB", flush=True)
    load_end = os.getloadavg()
    compiler = subprocess.run([args.cxx, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    ref = rows[0][1]
    lines = [
        "| translation unit | CPU s (fastest of %d) | slowest | x reference | peak RSS MB |" % args.repeat,
        "|---|---:|---:|---:|---:|",
        *(f"| {name} | {cpu:.1f} | {slow:.1f} | {cpu / ref:.2f} | {rss:.0f} |" for name, cpu, slow, rss in rows),
        "",
        f"{compiler}, `{shlex.join(cxx[1:6])}`; {cpu_model()}, {os.cpu_count()} cores; "
        f"load average (1 min) {load[0]:.1f} at the start, {load_end[0]:.1f} at the end.",
    ]
    table = "\n".join(lines)
    print(table)
    if args.write:
        text = DOC.read_text()
        i, j = text.index(BEGIN), text.index(END)
        DOC.write_text(text[: i + len(BEGIN)] + "\n" + table + "\n" + text[j:])
        print(f"wrote {DOC.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
