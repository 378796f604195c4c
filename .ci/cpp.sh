#!/usr/bin/env bash
# C++ side of CI: configure and build relucore as a plain CMake project with its
# tests, run ctest and install into a temporary prefix. Then a matrix of small
# downstream projects, each configured once, built and run:
#   - cpp/examples/consumer against the installed package: g++ and clang++,
#     OpenMP on and off (the consumer's choice, relucore_USE_OPENMP), the
#     vendored Eigen and an "installed" Eigen3 package;
#   - cpp/examples/subproject (add_subdirectory) and cpp/examples/fetchcontent
#     (FetchContent from a file:// archive of this checkout).
# First, every public header alone under strict warnings (.ci/strict_headers.sh).
# The downstream code is compiled with -Wall -Wextra -Werror. Relucore's headers
# are system headers for a consumer of the installed package (imported target),
# ordinary headers for the add_subdirectory/FetchContent projects, so -Werror
# covers them there.
# Everything happens under a temporary directory; exits non-zero on any failure.
# Environment: RELUCORE_CI_JOBS (2), RELUCORE_CI_COMPILERS ("g++ clang++").
set -euo pipefail

# shellcheck source=.ci/cxx_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/cxx_env.sh"
WARN="-Wall -Wextra -Werror"
if ! command -v cmake >/dev/null 2>&1; then
  python3 -m pip install -q cmake ninja
fi
GEN=()
if command -v ninja >/dev/null 2>&1; then GEN=(-G Ninja); fi

# clang++ with OpenMP (libomp) for the clang cells, installed only if missing.
if [[ " ${COMPILERS[*]} " == *" clang++ "* ]]; then
  has_clang_omp() {
    command -v clang++ >/dev/null 2>&1 &&
      echo '#include <omp.h>' | clang++ -fopenmp -x c++ -fsyntax-only - >/dev/null 2>&1
  }
  if ! has_clang_omp; then
    echo "== [${SECONDS}s] installing clang and libomp-dev"
    { apt-get install -y -qq clang libomp-dev || { apt-get update -qq && apt-get install -y -qq clang libomp-dev; }; } \
      >"$WORK/apt.log" 2>&1 || true
    has_clang_omp || {
      cat "$WORK/apt.log" >&2
      echo "clang++ with OpenMP is not available; RELUCORE_CI_COMPILERS=g++ skips the clang cells" >&2
      exit 1
    }
  fi
fi

# Every public header warning-free under -Wall -Wextra -Wpedantic -Wshadow
# -Wconversion -Wsign-conversion -Werror, both compilers (fails fast, before the build).
bash "$ROOT/.ci/strict_headers.sh"

VERSION="$(sed -n 's/^version = "\([0-9][0-9.]*\)".*/\1/p' "$ROOT/pyproject.toml" | head -n 1)"

echo "== [${SECONDS}s] relucore C++: configure + build (in $WORK)"
cmake -S "$ROOT" -B "$WORK/build" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release \
      -DCMAKE_INSTALL_PREFIX="$WORK/prefix" -DRELUCORE_BUILD_TESTS=ON -DRELUCORE_INSTALL=ON >"$WORK/configure.log" \
  || { cat "$WORK/configure.log"; exit 1; }
cmake --build "$WORK/build" --parallel "$JOBS"

echo "== [${SECONDS}s] relucore C++: ctest"
ctest --test-dir "$WORK/build" --output-on-failure --parallel "$JOBS"

echo "== [${SECONDS}s] relucore C++: install"
cmake --install "$WORK/build" >"$WORK/install.log" || { cat "$WORK/install.log"; exit 1; }
PKG="$WORK/prefix/share/cmake/relucore"
test -f "$PKG/relucoreConfig.cmake"
test -f "$PKG/relucoreOpenMP.cmake"
test -f "$WORK/prefix/include/relucore/relucore.hpp"
grep -q "#define RELUCORE_VERSION_STRING \"$VERSION\"" "$WORK/prefix/include/relucore/version.hpp"
# OpenMP is decided by each consumer: the exported target must not carry it.
if grep -qiE "openmp|RELUCORE_WITH_OPENMP" "$PKG"/relucoreTargets*.cmake; then
  echo "the exported relucore::core carries OpenMP:" >&2; grep -iE "openmp" "$PKG"/relucoreTargets*.cmake >&2; exit 1
fi

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

echo "== [${SECONDS}s] configure-only checks: build-tree package, FetchContent from SOURCE_DIR"
# They prove the package files and the FetchContent declaration resolve; the
# compiled cells below prove the headers work.
cmake -S "$ROOT/cpp/examples/consumer" -B "$WORK/consumer-build-tree" "${GEN[@]}" \
      -Drelucore_DIR="$WORK/build/relucore-package" >"$WORK/consumer-build-tree.log" \
  || { cat "$WORK/consumer-build-tree.log"; exit 1; }
grep -q "consumer: relucore $VERSION" "$WORK/consumer-build-tree.log" || { cat "$WORK/consumer-build-tree.log"; exit 1; }
cmake -S "$ROOT/cpp/examples/fetchcontent" -B "$WORK/fc-source-dir" "${GEN[@]}" >"$WORK/fc-source-dir.log" \
  || { cat "$WORK/fc-source-dir.log"; exit 1; }

# A source archive of the checkout (tracked files as they are in the work tree),
# fetched through a file:// URL as a release archive would be.
(cd "$ROOT" && git ls-files -z | tar --null -T - -czf "$WORK/relucore-src.tar.gz" --transform 's,^,relucore/,')

# ------------------------------------------------------------- the matrix
# cell NAME EXPECT_OPENMP(on|off) SOURCE_DIR EXECUTABLE [cmake arguments...]:
# configure, build, run the executable, check its version and "openmp on|off"
# line. Cells run JOBS at a time, each compiling one translation unit.
mkdir -p "$WORK/logs"
cell() {
  local name="$1" expect="$2" src="$3" exe="$4"; shift 4
  local dir="$WORK/cells/$name" log="$WORK/logs/$name.log" start=$SECONDS
  {
    cmake -S "$src" -B "$dir" "${GEN[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS="$WARN" "$@" &&
      cmake --build "$dir" &&
      "$dir/$exe" >"$dir/run.out" && cat "$dir/run.out" &&
      grep -q "^relucore $VERSION ($VERSION), openmp $expect\$" "$dir/run.out" &&
      if [ "$exe" != consumer ]; then
        # add_subdirectory/FetchContent: none of relucore's tests, install
        # rules or Python module comes along.
        ! grep -qE "relucore_test_|[ /]_core[.:]" "$dir/build.ninja" "$dir/Makefile" 2>/dev/null &&
          [ ! -f "$dir/CTestTestfile.cmake" ] &&
          cmake --install "$dir" --prefix "$dir/installed" && [ ! -e "$dir/installed" ]
      fi
  } >"$log" 2>&1 || { echo "FAILED $name (log below)"; cat "$log"; return 1; }
  echo "   ok $name ($((SECONDS - start))s)"
}
pids=()
failed=0
run_cell() {
  if [ "${#pids[@]}" -ge "$JOBS" ]; then
    wait -n || failed=1
    local alive=()
    for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive+=("$p"); done
    pids=("${alive[@]}")
  fi
  cell "$@" &
  pids+=($!)
}

echo "== [${SECONDS}s] matrix: consumer against the installed package (${COMPILERS[*]} x OpenMP on/off x vendored/installed Eigen)"
for cxx in "${COMPILERS[@]}"; do
  for omp in ON OFF; do
    expect=$([ "$omp" = ON ] && echo on || echo off)
    run_cell "consumer-$cxx-omp$omp-vendored" "$expect" "$ROOT/cpp/examples/consumer" consumer \
      -DCMAKE_CXX_COMPILER="$cxx" -Drelucore_USE_OPENMP="$omp" -DCMAKE_PREFIX_PATH="$WORK/prefix"
    run_cell "consumer-$cxx-omp$omp-eigen3pkg" "$expect" "$ROOT/cpp/examples/consumer" consumer \
      -DCMAKE_CXX_COMPILER="$cxx" -Drelucore_USE_OPENMP="$omp" -DCMAKE_PREFIX_PATH="$WORK/prefix-eigen" \
      -DEigen3_DIR="$WORK/eigen3-pkg"
  done
done

echo "== [${SECONDS}s] matrix: add_subdirectory and FetchContent"
last="${COMPILERS[${#COMPILERS[@]}-1]}"
run_cell "subproject-${COMPILERS[0]}-ompON" on "$ROOT/cpp/examples/subproject" subproject_demo \
  -DCMAKE_CXX_COMPILER="${COMPILERS[0]}"
# The earlier option name still works.
run_cell "subproject-$last-ompOFF-oldname" off "$ROOT/cpp/examples/subproject" subproject_demo \
  -DCMAKE_CXX_COMPILER="$last" -DRELUCORE_USE_OPENMP=OFF
run_cell "fetchcontent-url-$last-ompON" on "$ROOT/cpp/examples/fetchcontent" fetchcontent_demo \
  -DCMAKE_CXX_COMPILER="$last" -DRELUCORE_URL="file://$WORK/relucore-src.tar.gz"
for p in "${pids[@]}"; do wait "$p" || failed=1; done
[ "$failed" -eq 0 ] || { echo "relucore C++: matrix failed" >&2; exit 1; }

echo "== [${SECONDS}s] relucore C++: all passed"
