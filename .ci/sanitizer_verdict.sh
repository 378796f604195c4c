# Shared by .ci/sanitize.sh and .ci/cpp_asan.sh (sourced, not run):
#   sanitizer_verdict NAME REPORT_GLOB LOG STATUS
# fails (exit 1, or STATUS) on any sanitizer report file matching REPORT_GLOB, on any
# sanitizer report in the test output LOG, or on a non-zero test STATUS.
sanitizer_verdict() {
  local name="$1" glob="$2" log="$3" status="$4" reports
  # shellcheck disable=SC2086
  reports=$(ls $glob 2>/dev/null || true)
  if [ -n "$reports" ]; then
    echo "$name: sanitizer reports:" >&2
    # shellcheck disable=SC2086
    cat $reports >&2
    exit 1
  fi
  if grep -qE "runtime error:|ERROR: (Address|Leak|UndefinedBehavior)Sanitizer" "$log"; then
    echo "$name: sanitizer report in the test output" >&2
    exit 1
  fi
  if [ "$status" -ne 0 ]; then
    echo "$name: tests failed under the sanitizers (exit $status)" >&2
    exit "$status"
  fi
}
