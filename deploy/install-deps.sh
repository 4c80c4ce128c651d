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
  node-llhttp libgtest-dev libgmock-dev
  nghttp2-client nghttp2-proxy curl wrk nginx-light h2o haproxy memcached starman caddy
  libserver-starter-perl prometheus python3 python3-h2 python3-yaml python3-websockets python3-grpcio openssl procps valgrind linux-perf
  libre2-dev zlib1g-dev libbrotli-dev libzstd-dev python3-brotli
  chromium chromium-driver python3-selenium
  util-linux iproute2 gnuplot-nox libjs-d3 libjs-moment media-types varnish
  scdoc man-db lintian dpkg-dev podman runc debootstrap
  libhiredis-dev redis-server libxxhash-dev
  libngtcp2-dev libngtcp2-crypto-gnutls-dev libnghttp3-dev libgnutls28-dev
"
# Node.js and npm run the HTTP cache conformance suite (bench/cache-tests, from the npm
# registry): Debian's, unless the machine already has a node and npm of its own.
command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || PACKAGES="$PACKAGES nodejs npm"

missing=
for p in $PACKAGES; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing="$missing $p"
done
# nginx, h2o, haproxy, memcached, varnish, caddy and prometheus are test and bench peers, started by the
# tests themselves on ports they pick: they must not run as services of this machine (holding port 80,
# 11211, 6379, 9090 and memory for nothing). While installing, a policy-rc.d forbids every service
# start (Debian's invoke-rc.d asks it); one put there by someone else is left alone.
SERVICES="nginx h2o haproxy memcached prometheus prometheus-node-exporter varnish varnishncsa redis-server
  caddy caddy-api"
POLICY=/usr/sbin/policy-rc.d
if [ -n "$missing" ]; then
  $SUDO apt-get update -q
  if [ ! -e "$POLICY" ]; then
    printf '#!/bin/sh\n# portico deploy/install-deps.sh: no service starts while installing\nexit 101\n' |
      $SUDO tee "$POLICY" >/dev/null
    $SUDO chmod 755 "$POLICY"
    trap '$SUDO rm -f "$POLICY"' EXIT
  fi
  $SUDO apt-get install -y -q --no-install-recommends $missing
fi
# Installed before, by an older version of this script or by hand: stopped and disabled.
for s in $SERVICES; do
  if [ -d /run/systemd/system ]; then
    $SUDO systemctl disable --now "$s.service" >/dev/null 2>&1 || true
  elif [ -x "/etc/init.d/$s" ]; then
    $SUDO "/etc/init.d/$s" stop >/dev/null 2>&1 || true
    $SUDO update-rc.d "$s" disable >/dev/null 2>&1 || true
  fi
done
