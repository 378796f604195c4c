#!/usr/bin/env bash
# Strict warnings on relucore's own headers: every public header compiles
# warning-free as an ordinary -I include (Eigen stays a system include) under
# each compiler: one translation unit per header under the first compiler (each
# header compiles alone), one unit with all of them under the others. cpp/tests/strict/instantiate.cpp
# instantiates the headers' templates. With OpenMP; the umbrella and the
# instantiation TU also without. Front end only (-fsyntax-only). Called by
# .ci/cpp.sh; exits non-zero on the first warning, printing it.
# Environment: RELUCORE_CI_JOBS (2), RELUCORE_CI_COMPILERS ("g++ clang++").
set -euo pipefail
# shellcheck source=.ci/cxx_env.sh
source "$(dirname "${BASH_SOURCE[0]}")/cxx_env.sh"
STRICT="-Wall -Wextra -Wpedantic -Wshadow -Wconversion -Wsign-conversion -Werror"

# strict_tu COMPILER omp|serial FILE: FILE is a header relative to cpp/include, a .cpp of the
# checkout or an absolute path (the generated all-headers unit).
strict_tu() {
  local cxx="$1" mode="$2" file="$3" src log
  local flags=(-std=c++17 -fsyntax-only -DEIGEN_DONT_PARALLELIZE)
  if [ "$mode" = omp ]; then flags+=(-fopenmp -DRELUCORE_WITH_OPENMP); fi
  if [[ "$file" == /* ]]; then src="$(cat "$file")"; elif [[ "$file" == *.cpp ]]; then src="$(cat "$ROOT/$file")"; else src="#include \"$file\""; fi
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

# Each header alone (it must compile on its own) under the first compiler; under the others
# every header in one translation unit: the warnings are the same, the shared Eigen and
# standard headers are parsed once instead of once per header.
all_headers="$WORK/all_headers.cpp"
for h in "${headers[@]}"; do printf '#include "%s"\n' "$h"; done >"$all_headers"
echo "== [${SECONDS}s] strict warnings: ${#headers[@]} headers one by one (${COMPILERS[0]}) and together (${COMPILERS[*]:1}), instantiate.cpp (${COMPILERS[*]}) ($STRICT)"
{
  for cxx in "${COMPILERS[@]}"; do
    if [ "$cxx" = "${COMPILERS[0]}" ]; then
      for f in "${headers[@]}"; do printf '%s\0omp\0%s\0' "$cxx" "$f"; done
    else
      printf '%s\0omp\0%s\0' "$cxx" "$all_headers"
    fi
    printf '%s\0omp\0%s\0' "$cxx" cpp/tests/strict/instantiate.cpp
    for f in relucore/analysis.hpp cpp/tests/strict/instantiate.cpp; do printf '%s\0serial\0%s\0' "$cxx" "$f"; done
  done
} | xargs -0 -n 3 -P "$JOBS" bash -c 'strict_tu "$@"' _ || { echo "strict warnings: failed" >&2; exit 1; }
echo "== [${SECONDS}s] strict warnings: all clean"
