#!/usr/bin/env bash
# pyright on the typed example (tests/typing/typed_usage.py) against the installed relucore: its
# explicit signatures, py.typed and the _core.pyi stubs. pyright's wheel bundles its JavaScript and
# the nodejs extra brings node as a wheel, so nothing is fetched but the two packages.
set -euo pipefail
cd "$(dirname "$0")/.."
python -m pip install -q "pyright[nodejs]==1.1.414" "typing_extensions>=4.5"
export PYRIGHT_PYTHON_IGNORE_WARNINGS=1  # no version check against the package index at run time
echo "== pyright (tests/typing)"
pyright -p .ci/pyrightconfig.json
