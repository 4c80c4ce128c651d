#!/bin/sh
# Installs the build dependencies, builds portico without its tests, and writes the Debian
# package build-package/portico_VERSION_ARCH.deb (deploy/debian/package.cmake), which
# `apt install ./build-package/portico_*.deb` installs with what it depends on.
set -eu
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
cmake -S . -B build-package -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPORTICO_TESTS=OFF
ninja -C build-package
(cd build-package && cpack -G DEB)
ls build-package/portico_*.deb
