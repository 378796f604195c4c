#!/usr/bin/env bash
# Layout, lint and format checks: the rules of docs/architecture.md
# (.ci/check_architecture.py), ruff (lint + format, configured in pyproject.toml)
# and clang-format (.clang-format) on relucore's own C++ (never cpp/third_party).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
python -m pip install -q "ruff==0.17.6" "clang-format==23.1.5"

echo "== layout (check_architecture.py)"
python .ci/check_architecture.py
echo "== ruff check"
ruff check .
echo "== ruff format --check"
ruff format --check .
echo "== clang-format"
find cpp/include cpp/bindings cpp/tests cpp/examples -name '*.hpp' -o -name '*.cpp' -o -name '*.inc' | sort |
  xargs clang-format --dry-run --Werror
echo "== lint: all passed"
