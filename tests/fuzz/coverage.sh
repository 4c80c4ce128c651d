#!/bin/sh
# Line coverage of the proxy's folders from the wire-to-wire corpus (issue 29): builds
# proxy_wire_replay with clang's source-based coverage in BUILD_DIR, runs every input of
# tests/fuzz/corpus/proxy_wire once, and prints llvm-cov's summary per folder.
#
# Usage: tests/fuzz/coverage.sh [BUILD_DIR] [CORPUS_DIR]   (default build-cov, the corpus)
set -eu
cd "$(dirname "$0")/../.."
BUILD=${1:-build-cov}
CORPUS=${2:-tests/fuzz/corpus/proxy_wire}
FLAGS="-fprofile-instr-generate -fcoverage-mapping"
CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Debug \
  -DCMAKE_C_FLAGS="$FLAGS" -DCMAKE_CXX_FLAGS="$FLAGS" -DCMAKE_EXE_LINKER_FLAGS="$FLAGS" >/dev/null
ninja -C "$BUILD" proxy_wire_replay >/dev/null
PROFILE="$BUILD/proxy_wire.profraw"
rm -f "$PROFILE"
LLVM_PROFILE_FILE="$PROFILE" "$BUILD/tests/proxy_wire_replay" "$CORPUS" 2>/dev/null
llvm-profdata merge -sparse "$PROFILE" -o "$BUILD/proxy_wire.profdata"
report() {
  llvm-cov report "$BUILD/tests/proxy_wire_replay" -instr-profile="$BUILD/proxy_wire.profdata" \
    "$@" | tail -1 | awk '{ printf "lines %s of %s covered (%s)\n", $8 - $9, $8, $10 }'
}
for folder in server upstream routing filters http core; do
  printf '%-10s ' "proxy/$folder"
  report "$PWD/proxy/$folder"
done
