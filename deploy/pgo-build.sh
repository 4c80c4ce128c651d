#!/bin/sh
# Builds portico and portico-backend with profile-guided optimisation into BUILD (default
# build-pgo): an instrumented build, a training run of it (deploy/pgo-train.py: HTTP/1.1, h2c
# and TLS clients, HTTP/1.1 and h2c origins), then the same tree built again from the counts it
# left. deploy/package.sh builds the Debian package this way; the bench measures this build.
# Needs what deploy/install-deps.sh installs (h2load, openssl). Usage: deploy/pgo-build.sh [BUILD]
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build-pgo}
shift $(($# > 0 ? 1 : 0))
# Extra cmake arguments (CPack's, the package's) go to both configurations.
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPORTICO_TESTS=OFF \
  -DPORTICO_PGO=generate "$@"
ninja -C "$BUILD" portico portico-backend
# Counts from an earlier training, or of other sources, would be merged into this one's.
find "$BUILD" -name '*.gcda' -delete
./deploy/pgo-train.py --build-dir "$BUILD"
n=$(find "$BUILD/proxy" -name '*.gcda' | wc -l)
if [ "$n" -eq 0 ]; then
  echo "pgo-build: the training run left no profile under $BUILD/proxy" >&2
  exit 1
fi
echo "pgo-build: $n profiles; building from them"
cmake -S . -B "$BUILD" -DPORTICO_PGO=use "$@"
ninja -C "$BUILD"
