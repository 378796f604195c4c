#!/usr/bin/env bash
# The documentation site, built strictly and offline from the installed relucore.
#
#   bash .ci/docs.sh [WHEEL]
#
# Installs Debian's doxygen (for the C++ reference) when missing, the docs extra (from
# WHEEL when given, as CI does with the wheel it built; otherwise from the checkout),
# then sphinx-build -W --keep-going: any warning, a broken cross-reference included, or a
# gallery example that raises fails the build. The build also checks the API reference
# (docs/_ext/apicheck.py: numpydoc Parameters/Returns of every public name, the table of
# docs/theory.md) and runs every docstring example. The site is docs/_build/html; the
# gallery runs every examples/plot_*.py. The C++ extension is never rebuilt here.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

if ! command -v doxygen >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "== docs: apt-get install doxygen"
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq doxygen >/dev/null
  else
    echo "docs: doxygen is missing and cannot be installed here (apt-get install doxygen)" >&2
    exit 1
  fi
fi

if [ $# -ge 1 ]; then
  python -m pip install -q "$1[docs]"
else
  python -m pip install -q ".[docs]"
fi

echo "== docs: sphinx-build -W --keep-going"
rm -rf docs/_build/html docs/api/generated docs/auto_examples docs/sg_execution_times.rst
MPLBACKEND=Agg python -m sphinx -W --keep-going -q -b html docs docs/_build/html
# Offline: no page may load anything from another host (scripts, styles, fonts, images).
python - <<'PY'
import pathlib, re, sys
bad = []
for page in pathlib.Path("docs/_build/html").rglob("*.html"):
    for m in re.finditer(r'<(script|link|img)[^>]*(src|href)="((?:https?:)?//[^"]+)"', page.read_text(encoding="utf-8")):
        bad.append(f"{page}: {m.group(3)}")
if bad:
    sys.exit("docs: pages load resources from the network:\n" + "\n".join(bad[:20]))
print("docs: built", sum(1 for _ in pathlib.Path("docs/_build/html").rglob("*.html")), "pages, no network resource")
PY
