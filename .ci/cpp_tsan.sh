#!/usr/bin/env bash
# The concurrency guard of the engines under ThreadSanitizer: cpp/tests/test_misuse.cpp
# (which also steps an engine from two threads on purpose, and must see the second
# refused without a data race) compiled alone with -fsanitize=thread and run. One
# translation unit, about a minute on 2 cores; any TSan report fails.
#
#   .ci/cpp_tsan.sh
#
# Environment: RELUCORE_TSAN_BUILD (build directory, default build/cpp-tsan).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
build_dir="${RELUCORE_TSAN_BUILD:-$root/build/cpp-tsan}"
start=$SECONDS
mkdir -p "$build_dir"
echo "cpp_tsan.sh: compiling cpp/tests/test_misuse.cpp with -fsanitize=thread"
g++ -std=c++17 -O1 -g1 -fsanitize=thread -fno-omit-frame-pointer -DEIGEN_DONT_PARALLELIZE -pthread \
  -I "$root/cpp/include" -isystem "$root/cpp/third_party/eigen" \
  "$root/cpp/tests/test_misuse.cpp" -o "$build_dir/test_misuse"
export TSAN_OPTIONS="halt_on_error=1:exitcode=66:second_deadlock_stack=1"
"$build_dir/test_misuse" >"$build_dir/run.log" 2>&1 || { cat "$build_dir/run.log" >&2; exit 1; }
if grep -q "ThreadSanitizer" "$build_dir/run.log"; then cat "$build_dir/run.log" >&2; exit 1; fi
tail -n 1 "$build_dir/run.log"
echo "cpp_tsan.sh: clean ($((SECONDS - start))s)"
