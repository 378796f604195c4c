#!/usr/bin/env bash
# Strict warnings on relucore's own headers: every public header compiles
# warning-free as an ordinary -I include (Eigen stays a system include) under
# each compiler, one translation unit per header; forwarding headers (a single
# #include) are covered by their target. cpp/tests/strict/instantiate.cpp
# instantiates the headers' templates. With OpenMP; the umbrella and the
# instantiation TU also without. Front end only (-fsyntax-only). Called by
# .ci/cpp.sh; exits non-zero on the first warning, printing it.
# Environment: RELUCORE_CI_JOBS (2), RELUCORE_CI_COMPILERS ("g++ clang++").
set -euo pipefail
# shellcheck source=.ci/cxx_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/cxx_env.sh"
STRICT="-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Werror"

# strict_tu COMPILER omp|serial FILE: FILE is a header relative to cpp/include or a .cpp of the checkout.
strict_tu() {
  local cxx="$1" mode="$2" file="$3" src log
  local flags=(-std=c++17 -fsyntax-only -DEIGEN_DONT_PARALLELIZE)
  if [ "$mode" = omp ]; then flags+=(-fopenmp -DRELUCORE_WITH_OPENMP); fi
  if [[ "$file" == *.cpp ]]; then src="$(cat "$ROOT/$file")"; else src="#include \"$file\""; fi
  log="$(mktemp "$WORK/tu.XXXXXX")"
  # shellcheck disable=SC2086
  printf '%s\n' "$src" | "$cxx" "${flags[@]}" $STRICT -I "$ROOT/cpp/include" \
    -isystem "$ROOT/cpp/third_party/eigen" -x c++ - >"$log" 2>&1 ||
    { echo "FAILED: $cxx ($mode) $file" >&2; cat "$log" >&2; return 1; }
}
export -f strict_tu
export ROOT WORK STRICT

headers=()
while IFS= read -r h; do
  code="$(grep -vE '^[[:space:]]*(//.*)?$|^#pragma once' "$h" || true)"
  if [ "$(printf '%s\n' "$code" | wc -l)" -eq 1 ] && [[ "$code" == '#include '* ]]; then continue; fi
  headers+=("${h#"$ROOT/cpp/include/"}")
done < <(find "$ROOT/cpp/include/relucore" -name '*.hpp' | sort)

echo "== [${SECONDS}s] strict warnings: ${#headers[@]} headers + instantiate.cpp, ${COMPILERS[*]} ($STRICT)"
{
  for cxx in "${COMPILERS[@]}"; do
    for f in "${headers[@]}" cpp/tests/strict/instantiate.cpp; do printf '%s\0omp\0%s\0' "$cxx" "$f"; done
    for f in relucore/analysis.hpp cpp/tests/strict/instantiate.cpp; do printf '%s\0serial\0%s\0' "$cxx" "$f"; done
  done
} | xargs -0 -n 3 -P "$JOBS" bash -c 'strict_tu "$@"' _ || { echo "strict warnings: failed" >&2; exit 1; }
echo "== [${SECONDS}s] strict warnings: all clean"
