#!/usr/bin/env bash
# Runs the fast test subset against an AddressSanitizer + UndefinedBehaviorSanitizer
# build of relucore._core and fails on any sanitizer report.
#
#   .ci/sanitize.sh [extra pytest arguments]
#
# The module is built with -DRELUCORE_SANITIZE=ON into build/asan (kept between
# runs, so rebuilds are incremental) and installed into its own virtual
# environment (build/asan-venv). The Python interpreter itself is not
# instrumented, so libasan (and libstdc++, which must come after it) are
# preloaded; leak detection is off because the interpreter never frees its
# interned objects. Environment overrides: RELUCORE_SANITIZE_VENV,
# RELUCORE_SANITIZE_BUILD, RELUCORE_SANITIZE_TESTS (the pytest selection).
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"

build_dir="${RELUCORE_SANITIZE_BUILD:-build/asan}"
venv="${RELUCORE_SANITIZE_VENV:-$root/build/asan-venv}"
log_dir="$root/$build_dir/logs"
mkdir -p "$root/$build_dir" "$log_dir"

cxx="${CXX:-c++}"
libasan="$("$cxx" -print-file-name=libasan.so)"
libstdcxx="$("$cxx" -print-file-name=libstdc++.so)"
for lib in "$libasan" "$libstdcxx"; do
  if [ ! -e "$lib" ]; then
    echo "sanitize.sh: $lib not found (is the compiler's ASan runtime installed?)" >&2
    exit 2
  fi
done
libasan="$(readlink -f "$libasan")"
libstdcxx="$(readlink -f "$libstdcxx")"

if [ ! -x "$venv/bin/python" ]; then
  # System site-packages provide numpy/scipy/pytest/hypothesis when present;
  # anything missing comes from the package index below.
  python3 -m venv --system-site-packages "$venv"
fi
# shellcheck disable=SC1091
source "$venv/bin/activate"
python - <<'PY' || python -m pip install -q "scikit-build-core>=0.10" "pybind11>=2.12" numpy scipy tqdm pytest hypothesis
import importlib.util, sys
need = ["scikit_build_core", "pybind11", "numpy", "scipy", "tqdm", "pytest", "hypothesis"]
sys.exit(any(importlib.util.find_spec(m) is None for m in need))
PY

echo "sanitize.sh: building relucore with ASan+UBSan into $build_dir"
# -O1 keeps the compile short; no NDEBUG, so Eigen's bounds assertions are on too.
python -m pip install -q --no-build-isolation --no-deps . \
  -Cbuild-dir="$build_dir" \
  -Ccmake.build-type=RelWithDebInfo \
  -Ccmake.define.CMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" \
  -Ccmake.define.RELUCORE_SANITIZE=ON

core_so="$(ls "$(python -c 'import sysconfig; print(sysconfig.get_paths()["platlib"])')"/relucore/_core*.so)"
if ! ldd "$core_so" | grep libasan >/dev/null; then  # not -q: with pipefail, grep -q ending early can fail ldd with SIGPIPE
  echo "sanitize.sh: $core_so is not linked against libasan: the sanitizer build did not take effect" >&2
  exit 2
fi

# The installed copy is tested: python/ is not on sys.path from the root.
# RELUCORE_SANITIZE_TESTS: test files or directories. The default is the tests
# that drive the compiled core (about 1 minute under the sanitizers on 2 cores),
# without those marked slow; RELUCORE_SANITIZE_TESTS=tests runs everything.
default_tests="tests/gd tests/reliability tests/theory tests/meanfield/test_meanfield_engine.py tests/experiments/test_literature_engines.py"
read -r -a tests <<< "${RELUCORE_SANITIZE_TESTS:-$default_tests}"
# The one long meanfield test (thread counts x segmentations) adds little under the sanitizers.
skip_long=(--deselect tests/meanfield/test_meanfield_engine.py::test_thread_count_and_segmentation_do_not_change_results)
[ -n "${RELUCORE_SANITIZE_TESTS:-}" ] && skip_long=()
log="$log_dir/pytest.log"
rm -f "$log_dir"/sanitizer.*
export ASAN_OPTIONS="detect_leaks=0:halt_on_error=1:exitcode=86:log_path=$log_dir/sanitizer${ASAN_OPTIONS_EXTRA:+:$ASAN_OPTIONS_EXTRA}"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87:log_path=$log_dir/sanitizer"
export RELUCORE_UNDER_SANITIZER=1
set +e
LD_PRELOAD="$libasan $libstdcxx" python -m pytest -q -p no:cacheprovider -m "not slow" "${tests[@]}" "${skip_long[@]}" "$@" 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e

# shellcheck source=.ci/sanitizer_verdict.sh
source .ci/sanitizer_verdict.sh   # (the script runs from the repository root)
sanitizer_verdict sanitize.sh "$log_dir/sanitizer.*" "$log" "$status"
echo "sanitize.sh: clean"
