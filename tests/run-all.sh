#!/bin/sh
# Installs what Portico needs, builds it twice (RelWithDebInfo, then ASan+UBSan) and runs every
# test in both builds, the fuzz target for a bounded time, and the format check. Any failure
# fails the whole run. Usage: tests/run-all.sh   (from anywhere in the checkout)
set -eu
cd "$(dirname "$0")/.."
ROOT=$(pwd)
JOBS=$(nproc)
export CTEST_OUTPUT_ON_FAILURE=1

step() { printf '\n==== %s\n' "$*"; }

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
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
ninja -C build -j "$JOBS"

step "tests: RelWithDebInfo"
ctest --test-dir build -j "$JOBS" --timeout 600

step "build: ASan+UBSan"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DPORTICO_SANITIZE=ON
ninja -C build-asan -j "$JOBS"

step "tests: ASan+UBSan"
# Benchmarks are about speed, the HTTP cache suite about behaviour a sanitizer build does not
# change (test_proxy_cache runs the same paths under it): under sanitizers they prove nothing.
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  ctest --test-dir build-asan -j "$JOBS" --timeout 900 -LE "bench|conformance"

if [ -d tests/fuzz ] && [ -f tests/fuzz/CMakeLists.txt ]; then
  step "fuzz: libFuzzer (clang), bounded time"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DPORTICO_FUZZ=ON
  ninja -C build-fuzz -j "$JOBS" fuzzers # the fuzz targets only: the rest is built twice above
  ctest --test-dir build-fuzz -j "$JOBS" -L fuzz # each fuzzer is one thread
fi

step "all passed"
