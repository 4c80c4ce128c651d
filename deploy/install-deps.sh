#!/bin/sh
# Installs every build, test and bench dependency of Portico from Debian 12's packages.
# Idempotent: apt-get install skips what is already there.
set -eu
export DEBIAN_FRONTEND=noninteractive
SUDO=
[ "$(id -u)" = 0 ] || SUDO=sudo

PACKAGES="
  build-essential cmake ninja-build pkg-config git clang clang-format libclang-rt-14-dev
  libnghttp2-dev libev-dev libssl-dev libc-ares-dev prometheus-cpp-dev libtomlplusplus-dev
  libmemcached-dev node-llhttp libgtest-dev libgmock-dev
  nghttp2-client nghttp2-proxy curl wrk nginx-light h2o haproxy memcached starman
  libserver-starter-perl prometheus python3 python3-h2 openssl procps valgrind
"

missing=
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
if [ -n "$missing" ]; then
  $SUDO apt-get update -q
  # Services from these packages (nginx, memcached, h2o, haproxy, prometheus) are started by the
  # tests and benches themselves on ports they pick; the distro's own units are not needed.
  $SUDO apt-get install -y -q --no-install-recommends $missing
fi
