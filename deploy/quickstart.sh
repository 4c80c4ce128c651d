#!/bin/sh
# Installs Portico's dependencies, builds it, and runs portico-backend serving hello on
# 127.0.0.1:8080 (HTTP/1.1 and h2c) in the foreground. Ctrl-C stops it.
set -eu
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
ninja -C build
cat <<'MSG'

portico-backend is starting on 127.0.0.1:8080 with 4 workers. Try:
  curl http://127.0.0.1:8080/                              # HTTP/1.1: hello world
  curl --http2-prior-knowledge http://127.0.0.1:8080/      # h2c, prior knowledge
  curl --http2 'http://127.0.0.1:8080/counter?id=1'        # h2c via Upgrade: {"counter":N}
  nghttp -nv http://127.0.0.1:8080/hello                   # nghttp2's client
Ctrl-C stops it (SIGINT: immediate); kill -TERM <pid> stops it gracefully.

MSG
exec ./build/backend/portico-backend --listen 127.0.0.1:8080 --workers 4
