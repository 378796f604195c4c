#!/usr/bin/env bash
# C++ side of CI: configure and build relucore as a plain CMake project with its
# tests, run ctest, install into a temporary prefix, then build and run the
# consumer project (cpp/examples/consumer) against the installed package.
# Everything happens under a temporary directory; exits non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="${RELUCORE_CI_JOBS:-2}"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/relucore-cpp.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
GEN=()
if command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); fi

echo "== relucore C++: configure + build (in $WORK)"
cmake -S "$ROOT" -B "$WORK/build" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$WORK/prefix" -DRELUCORE_BUILD_TESTS=ON -DRELUCORE_INSTALL=ON >"$WORK/configure.log" \
  || { cat "$WORK/configure.log"; exit 1; }
cmake --build "$WORK/build" --parallel "$JOBS"

echo "== relucore C++: ctest"
ctest --test-dir "$WORK/build" --output-on-failure --parallel "$JOBS"

echo "== relucore C++: install"
cmake --install "$WORK/build" >"$WORK/install.log" || { cat "$WORK/install.log"; exit 1; }
test -f "$WORK/prefix/share/cmake/relucore/relucoreConfig.cmake"
test -f "$WORK/prefix/include/relucore/relucore.hpp"

echo "== consumer project against the installed package"
cmake -S "$ROOT/cpp/examples/consumer" -B "$WORK/consumer" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$WORK/prefix"
cmake --build "$WORK/consumer" --parallel "$JOBS"
"$WORK/consumer/consumer"

echo "== consumer project against the build tree (export())"
cmake -S "$ROOT/cpp/examples/consumer" -B "$WORK/consumer-build-tree" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
      -Drelucore_DIR="$WORK/build/relucore-package" >/dev/null
cmake --build "$WORK/consumer-build-tree" --parallel "$JOBS"
"$WORK/consumer-build-tree/consumer" >/dev/null

echo "== relucore C++: all passed"
