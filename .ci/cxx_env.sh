# The setup the C++ CI scripts share (cpp.sh, strict_headers.sh), sourced after `set -euo pipefail`:
# ROOT (the checkout), JOBS (RELUCORE_CI_JOBS, default 2), COMPILERS (RELUCORE_CI_COMPILERS,
# default "g++ clang++") and WORK, a temporary directory removed on exit.
# shellcheck shell=bash
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="${RELUCORE_CI_JOBS:-2}"
read -r -a COMPILERS <<< "${RELUCORE_CI_COMPILERS:-g++ clang++}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
