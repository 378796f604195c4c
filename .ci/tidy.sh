#!/usr/bin/env bash
# clang-tidy (.clang-tidy: bugprone-*, performance-* and a few others) on
# relucore's headers through cpp/tests/strict/instantiate.cpp, which includes
# every header (relucore/analysis.hpp) and instantiates their templates; once
# without OpenMP, the serial build. Any diagnostic in cpp/include fails.
# Called from .ci/run; clang-tidy is installed from pip, pinned like clang-format.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
python -m pip install -q "clang-tidy==23.1.4"
echo "== [${SECONDS}s] clang-tidy ($(clang-tidy --version | grep -o 'version [0-9.]*'))"
clang-tidy --quiet cpp/tests/strict/instantiate.cpp -- -std=c++17 -DEIGEN_DONT_PARALLELIZE \
  -I cpp/include -isystem cpp/third_party/eigen
echo "== [${SECONDS}s] clang-tidy: clean"
