#!/usr/bin/env bash
# Builds the C++ tests (ctest) with AddressSanitizer + UndefinedBehaviorSanitizer
# and runs them; fails on any test failure or sanitizer report.
#
#   .ci/cpp_asan.sh [extra ctest arguments]
#
# -O1 -g1 keeps the build short; NDEBUG stays undefined, so Eigen's bounds
# assertions are on too. UBSan findings abort (-fno-sanitize-recover). The
# compile-fail and link-fail (abi_link_*) tests are left to the ordinary build (they run no code).
# The build directory (build/cpp-asan) is kept between runs, so rebuilds are
# incremental. Environment: RELUCORE_ASAN_BUILD (build directory),
# RELUCORE_CI_JOBS (2).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
build_dir="${RELUCORE_ASAN_BUILD:-$root/build/cpp-asan}"
jobs="${RELUCORE_CI_JOBS:-2}"
log_dir="$build_dir/sanitizer-logs"
start=$SECONDS

mkdir -p "$build_dir"
gen=()
if command -v ninja >/dev/null 2>&1; then gen=(-G Ninja); fi
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
echo "cpp_asan.sh: configuring the C++ tests with ASan+UBSan in $build_dir"
cmake -S "$root" -B "$build_dir" "${gen[@]}" -DRELUCORE_BUILD_TESTS=ON -DRELUCORE_INSTALL=OFF \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -DCMAKE_CXX_FLAGS="$flags" -DCMAKE_EXE_LINKER_FLAGS="$flags" >"$build_dir/configure.log" 2>&1 \
  || { cat "$build_dir/configure.log" >&2; exit 1; }
cmake --build "$build_dir" --parallel "$jobs"

rm -rf "$log_dir"
mkdir -p "$log_dir"
export ASAN_OPTIONS="halt_on_error=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:log_path=$log_dir/asan"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:log_path=$log_dir/ubsan"
log="$build_dir/ctest.log"
set +e
ctest --test-dir "$build_dir" --output-on-failure --parallel "$jobs" -E '^(compile_fail|abi_link)_' "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

# shellcheck source=.ci/sanitizer_verdict.sh
source .ci/sanitizer_verdict.sh   # (the script runs from the repository root)
sanitizer_verdict cpp_asan.sh "$log_dir/*" "$log" "$status"
echo "cpp_asan.sh: clean ($((SECONDS - start))s)"
