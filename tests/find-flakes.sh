#!/bin/sh
# Looks for flaky integration tests: runs each one N times in a build (the ASan one by default)
# while a CPU hog keeps every core busy, and reports each test's failures, keeping the output of
# every failed run. A test that fails once in twenty blocks every landing: this is how to find
# it before CI does.
#
# Usage: tests/find-flakes.sh [-n RUNS] [-j JOBS] [-b BUILD_DIR] [-R REGEX] [-o OUT_DIR]
#   -n RUNS       runs per test (default 20)
#   -j JOBS       tests run at once (default 1); more adds load to the hogs' and shortens a pass,
#                 as CI's own ctest -j does
#   -b BUILD_DIR  a configured, built tree (default build-asan; tests/run-all.sh makes it)
#   -R REGEX      only the integration tests whose ctest name matches (default: all)
#   -o OUT_DIR    where report.txt, progress.txt and failed runs' logs go (default a new
#                 /tmp/portico-flakes-*)
# Exits 1 when any run failed, 0 when none did.
set -eu
cd "$(dirname "$0")/.."
RUNS=20
JOBS=1
BUILD=build-asan
REGEX=.
OUT=
while getopts n:j:b:R:o: opt; do
  case $opt in
  n) RUNS=$OPTARG ;;
  j) JOBS=$OPTARG ;;
  b) BUILD=$OPTARG ;;
  R) REGEX=$OPTARG ;;
  o) OUT=$OPTARG ;;
  *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
done
[ -f "$BUILD/CTestTestfile.cmake" ] || { echo "no test tree in $BUILD: build it first" >&2; exit 2; }
[ -n "$OUT" ] || OUT=$(mktemp -d /tmp/portico-flakes-XXXXXX)
mkdir -p "$OUT"

# One busy loop per core, at the tests' own priority: they must pass on a loaded machine.
HOGS=
for _ in $(seq "$(nproc)"); do
  sh -c 'while :; do :; done' &
  HOGS="$HOGS $!"
done
trap 'kill $HOGS 2>/dev/null || true' EXIT
trap 'exit 130' INT TERM # a handled signal would otherwise only end the current run

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
TESTS=$(ctest --test-dir "$BUILD" -N -L integration -LE "bench|package|container" | sed -n 's/^ *Test *#[0-9]*: \(integration\..*\)$/\1/p' |
        grep -E -- "$REGEX" || true)
[ -n "$TESTS" ] || { echo "no integration test matches '$REGEX'" >&2; exit 2; }
REPORT="$OUT/report.txt"
PROGRESS="$OUT/progress.txt"
: >"$REPORT"
: >"$PROGRESS"
# Pass after pass over every test, not test after test: a run cut short still says something
# about each test, and progress.txt shows how far it got.
i=1
while [ "$i" -le "$RUNS" ]; do
  # shellcheck disable=SC2016 # expanded by the inner shell, once per test
  printf '%s\n' "$TESTS" | xargs -P "$JOBS" -I{} sh -c '
    log="$1/$2.run$3.log"
    if ctest --test-dir "$4" -R "^$2\$" --output-on-failure --timeout 900 >"$log" 2>&1; then
      rm -f "$log"
    else
      echo "$(date -u +%H:%M:%S) pass $3: $2 FAILED ($log)" >>"$5"
    fi' sh "$OUT" {} "$i" "$BUILD" "$PROGRESS"
  echo "$(date -u +%H:%M:%S) pass $i of $RUNS done" >>"$PROGRESS"
  i=$((i + 1))
done
TOTAL_FAILED=0
for t in $TESTS; do
  failed=$(find "$OUT" -name "$t.run*.log" | wc -l)
  TOTAL_FAILED=$((TOTAL_FAILED + failed))
  printf '%-50s %2d of %d runs failed\n' "$t" "$failed" "$RUNS" | tee -a "$REPORT"
done
echo "$TOTAL_FAILED failed runs in all; report: $REPORT" | tee -a "$REPORT"
[ "$TOTAL_FAILED" -eq 0 ]
