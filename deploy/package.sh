#!/bin/sh
# Installs the build dependencies, builds portico without its tests, and writes the Debian
# package build-package/portico_VERSION_ARCH.deb (deploy/debian/package.cmake), which
# `apt install ./build-package/portico_*.deb` installs with what it depends on.
set -eu
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
# Profile-guided (deploy/pgo-build.sh): built, trained on HTTP/1.1, h2c and TLS traffic, and
# built again from what the training ran; the bench measures this build.
./deploy/pgo-build.sh build-package
(cd build-package && cpack -G DEB)
ls build-package/portico_*.deb
