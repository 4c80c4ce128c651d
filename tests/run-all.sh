#!/bin/sh
# Installs what Portico needs, builds it twice (RelWithDebInfo, then ASan+UBSan) and runs every
# test in both builds, the fuzz target for a bounded time, and the format check. Any failure
# fails the whole run. Usage: tests/run-all.sh   (from anywhere in the checkout)
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
JOBS=$(nproc)
# Tests run one more at a time than there are cores: alone, either build's tests kept the two
# cores only 41-49% busy (they wait on sockets, timers and peers), and at -j2 their wall time,
# not the CPU, ended both test stages (503 and 413 s; the niced build beside them needed 480
# and 372 CPU seconds). find-flakes.sh holds every test to a nice-0 hog per core, a heavier load.
TEST_JOBS=$((JOBS + 1))
export CTEST_OUTPUT_ON_FAILURE=1

START=$(date +%s)
step() { printf '\n==== %s (at %d s)\n' "$*" $(($(date +%s) - START)); }

step "dependencies"
./deploy/install-deps.sh

step "format check (clang-format)"
bad=$(git ls-files '*.cc' '*.h' | xargs clang-format --dry-run 2>&1 | grep -c 'warning:' || true)
if [ "$bad" != "0" ]; then
  git ls-files '*.cc' '*.h' | xargs clang-format --dry-run 2>&1 | head -40
  echo "clang-format: $bad places differ from .clang-format" >&2
  exit 1
fi

step "build: RelWithDebInfo"
# The unit tests are built and run in the ASan+UBSan build only: compiled here too, they took
# half of this build's time (400 of 760 CPU seconds) to run the same tests without the checks.
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPORTICO_DEBUG_INFO=-g1 \
  -DPORTICO_UNIT_TESTS=OFF
ninja -C build -j "$JOBS"

# While a build's tests run, the next build compiles at the lowest priority (nice 19): the tests
# leave about half of the two cores idle, waiting on sockets and timers, and a nice-0 test
# preempts the compiler whenever it wants a core. The clean-clone run took 31 minutes with
# every step in turn.
BACKGROUND=
trap 'if [ -n "$BACKGROUND" ]; then kill "$BACKGROUND" 2>/dev/null || true; fi' EXIT
in_background() { # LOG COMMAND...: runs COMMAND niced, its output to LOG
  log=$1
  shift
  nice -n 19 "$@" > "$log" 2>&1 &
  BACKGROUND=$!
}
finish_background() { # LOG WHAT: waits for it; on failure shows LOG and fails
  if ! wait "$BACKGROUND"; then
    BACKGROUND=
    cat "$1"
    echo "$2 failed" >&2
    exit 1
  fi
  BACKGROUND=
  tail -n 3 "$1"
}

mkdir -p build-asan
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPORTICO_SANITIZE=ON \
  -DPORTICO_DEBUG_INFO=-g1 > /dev/null
in_background build-asan/build.log ninja -C build-asan -j "$JOBS"

step "tests: RelWithDebInfo (the ASan+UBSan build compiles meanwhile, niced)"
# The chaos soak (label soak, 60 s) runs here, in the optimised build; under the sanitizers
# it is run by hand (tests/soak/README.md), its minute being what this stage can spare.
ctest --test-dir build -j "$TEST_JOBS" --timeout 600 -LE container

step "build: ASan+UBSan"
finish_background build-asan/build.log "build: ASan+UBSan"

FUZZ=
if [ -d tests/fuzz ] && [ -f tests/fuzz/CMakeLists.txt ]; then
  FUZZ=1
  mkdir -p build-fuzz
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DPORTICO_FUZZ=ON \
    -DPORTICO_DEBUG_INFO=-g1 > /dev/null
  # The fuzz targets only, and the product libraries the wire-to-wire one links (instrumented).
  in_background build-fuzz/build.log ninja -C build-fuzz -j "$JOBS" fuzzers
fi

step "tests: ASan+UBSan (the fuzz targets compile meanwhile, niced)"
# Benchmarks are about speed, the HTTP cache suite about behaviour a sanitizer build does not
# change (test_proxy_cache runs the same paths under it), the Debian package is installed once
# (from the optimised build): under sanitizers they prove nothing.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -j "$TEST_JOBS" --timeout 900 -LE "bench|conformance|soak|package|container"

if [ -n "$FUZZ" ]; then
  step "fuzz: libFuzzer (clang), bounded time"
  finish_background build-fuzz/build.log "build: fuzz targets"
  ctest --test-dir build-fuzz -j "$JOBS" -L fuzz # each fuzzer is one thread
fi

step "all passed"
