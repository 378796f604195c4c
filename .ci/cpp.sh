#!/usr/bin/env bash
# C++ side of CI: configure and build relucore as a plain CMake project with its
# tests, run ctest, install into a temporary prefix, then build and run the
# consumer project (cpp/examples/consumer) against the installed package.
# Everything happens under a temporary directory; exits non-zero on any failure.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
JOBS="${RELUCORE_CI_JOBS:-2}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
if ! command -v cmake >/dev/null 2>&1; then
  python3 -m pip install -q cmake ninja
fi
GEN=()
if command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); fi

echo "== [${SECONDS}s] relucore C++: configure + build (in $WORK)"
cmake -S "$ROOT" -B "$WORK/build" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$WORK/prefix" -DRELUCORE_BUILD_TESTS=ON -DRELUCORE_INSTALL=ON >"$WORK/configure.log" \
  || { cat "$WORK/configure.log"; exit 1; }
cmake --build "$WORK/build" --parallel "$JOBS"

echo "== [${SECONDS}s] relucore C++: ctest"
ctest --test-dir "$WORK/build" --output-on-failure --parallel "$JOBS"

echo "== [${SECONDS}s] relucore C++: install"
cmake --install "$WORK/build" >"$WORK/install.log" || { cat "$WORK/install.log"; exit 1; }
test -f "$WORK/prefix/share/cmake/relucore/relucoreConfig.cmake"
test -f "$WORK/prefix/include/relucore/relucore.hpp"

echo "== [${SECONDS}s] consumer project against the installed package"
cmake -S "$ROOT/cpp/examples/consumer" -B "$WORK/consumer" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_PREFIX_PATH="$WORK/prefix"
cmake --build "$WORK/consumer" --parallel "$JOBS"
"$WORK/consumer/consumer"

echo "== [${SECONDS}s] consumer project against the build tree (export())"
# The extra checks only configure the consumer: they prove the package files
# resolve (the compiled consumer above already proved the headers work).
cmake -S "$ROOT/cpp/examples/consumer" -B "$WORK/consumer-build-tree" "${GEN[@]}" \
      -Drelucore_DIR="$WORK/build/relucore-package" >"$WORK/consumer-build-tree.log" \
  || { cat "$WORK/consumer-build-tree.log"; exit 1; }

echo "== [${SECONDS}s] external Eigen: find_package(Eigen3) at configure time, find_dependency in the package"
# A stand-in Eigen3 package (the vendored headers behind an Eigen3::Eigen
# target) exercises the branch taken on machines with libeigen3-dev.
mkdir -p "$WORK/eigen3-pkg"
cat >"$WORK/eigen3-pkg/Eigen3Config.cmake" <<CFG
if(NOT TARGET Eigen3::Eigen)
  add_library(Eigen3::Eigen INTERFACE IMPORTED)
  set_target_properties(Eigen3::Eigen PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "$ROOT/cpp/third_party/eigen")
endif()
set(Eigen3_VERSION 3.4.0)
CFG
cat >"$WORK/eigen3-pkg/Eigen3ConfigVersion.cmake" <<'CFG'
set(PACKAGE_VERSION 3.4.0)
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
CFG
cmake -S "$ROOT" -B "$WORK/build-eigen" "${GEN[@]}" -DRELUCORE_BUILD_TESTS=OFF -DEigen3_DIR="$WORK/eigen3-pkg" \
      -DCMAKE_INSTALL_PREFIX="$WORK/prefix-eigen" >"$WORK/configure-eigen.log"
grep -q "relucore: using Eigen 3.4.0" "$WORK/configure-eigen.log" || { cat "$WORK/configure-eigen.log"; exit 1; }
cmake --install "$WORK/build-eigen" >/dev/null
if [ -d "$WORK/prefix-eigen/include/relucore/third_party" ]; then
  echo "vendored Eigen installed although an external Eigen was used" >&2; exit 1
fi
grep -q "Eigen3::Eigen" "$WORK/prefix-eigen/share/cmake/relucore/relucoreTargets.cmake"
cmake -S "$ROOT/cpp/examples/consumer" -B "$WORK/consumer-eigen" "${GEN[@]}" \
      -DCMAKE_PREFIX_PATH="$WORK/prefix-eigen" -DEigen3_DIR="$WORK/eigen3-pkg" >"$WORK/consumer-eigen.log" \
  || { cat "$WORK/consumer-eigen.log"; exit 1; }

echo "== [${SECONDS}s] relucore C++: all passed"
