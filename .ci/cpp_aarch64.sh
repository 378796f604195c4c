#!/usr/bin/env bash
# The C++ tests on aarch64: cross-compiled with Debian's aarch64-linux-gnu-g++ and run under
# qemu-user (CMAKE_CROSSCOMPILING_EMULATOR), so that the portable paths, which an ARM CPU
# (Apple silicon, Graviton) runs with Eigen's NEON packets and no x86 dispatch, are built and
# checked against the same references as on x86-64. qemu checks results, not speed.
#
#   .ci/cpp_aarch64.sh                          # every test program and example
#   .ci/cpp_aarch64.sh test_engines test_flow   # some of them (what .ci/run does: see there)
#
# Installs g++-aarch64-linux-gnu and qemu-user with apt-get when they are missing (as root).
# Environment: RELUCORE_AARCH64_BUILD (build directory, default build/cpp-aarch64),
# RELUCORE_AARCH64_CXX (the compiler: aarch64-linux-gnu-g++, the default, or clang++, which
# targets aarch64-linux-gnu with the GNU cross toolchain's headers and libraries; clang, unlike
# GCC, contracts a * b + c into an FMA by default, and aarch64 has FMA in its base set).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
build_dir="${RELUCORE_AARCH64_BUILD:-$root/build/cpp-aarch64}"
start=$SECONDS

if ! command -v aarch64-linux-gnu-g++ >/dev/null || ! command -v qemu-aarch64 >/dev/null; then
  if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null; then
    echo "cpp_aarch64.sh: needs aarch64-linux-gnu-g++ and qemu-aarch64 (Debian: g++-aarch64-linux-gnu qemu-user)" >&2
    exit 2
  fi
  echo "cpp_aarch64.sh: installing the cross compiler and qemu-user"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q g++-aarch64-linux-gnu qemu-user >/dev/null
fi

cxx="${RELUCORE_AARCH64_CXX:-aarch64-linux-gnu-g++}"
compiler=(-DCMAKE_CXX_COMPILER="$cxx")
if [[ "$cxx" == *clang++* ]]; then compiler+=(-DCMAKE_CXX_COMPILER_TARGET=aarch64-linux-gnu); fi

mkdir -p "$build_dir"
cmake -S "$root" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_SYSTEM_NAME=Linux -DCMAKE_SYSTEM_PROCESSOR=aarch64 "${compiler[@]}" \
  "-DCMAKE_CROSSCOMPILING_EMULATOR=qemu-aarch64;-L;/usr/aarch64-linux-gnu" \
  -DRELUCORE_BUILD_TESTS=ON -DRELUCORE_INSTALL=OFF >"$build_dir/configure.log" 2>&1 \
  || { cat "$build_dir/configure.log" >&2; exit 1; }
# The test programs named (ctest's names: test_engines, example_dual_gd, ...), or all of them;
# not the compile-fail cases, the ABI or the install checks, which test the x86-64 build's CMake.
if [ "$#" -gt 0 ]; then
  tests=("$@")
else
  mapfile -t tests < <(cmake --build "$build_dir" --target help | sed -n 's/^relucore_\(\(test\|example\)_[a-z_0-9]*\): .*/\1/p')
fi
targets=("${tests[@]/#/relucore_}")
cmake --build "$build_dir" -j "$(nproc)" --target "${targets[@]}"
regex="^($(IFS='|'; echo "${tests[*]}"))\$"
ctest --test-dir "$build_dir" -j "$(nproc)" --output-on-failure -R "$regex" | tail -n 3
echo "cpp_aarch64.sh: ${#tests[@]} program(s) built by $cxx for $(file -b "$build_dir/cpp/tests/relucore_${tests[0]}" 2>/dev/null | cut -d, -f2 || echo aarch64) and run under qemu ($((SECONDS - start))s)"
