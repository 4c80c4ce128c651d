#!/bin/sh
# Installs Portico's dependencies, builds it, and runs portico-backend (4 workers on a unix
# socket) with portico in front of it on 127.0.0.1:8080 (HTTP/1.1 and h2c) and 127.0.0.1:8443
# (TLS with a self-signed certificate made here, h2 and HTTP/1.1). Ctrl-C stops both.
set -eu
cd "$(dirname "$0")/.."
./deploy/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
ninja -C build

RUN=$(mktemp -d /tmp/portico-quickstart.XXXXXX)
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
  -keyout "$RUN/key.pem" -out "$RUN/cert.pem" -subj /CN=localhost \
  -addext subjectAltName=DNS:localhost,IP:127.0.0.1 2>/dev/null
cat > "$RUN/portico.toml" <<CONF
[server]
workers = 2

[[listener]]
address = "127.0.0.1:8080"

[[listener]]
address = "127.0.0.1:8443"
tls = { certificate = "$RUN/cert.pem", private_key = "$RUN/key.pem" }

[admin]
address = "127.0.0.1:9901"

[[cluster]]
name = "app"
endpoints = ["unix:$RUN/app.sock"]
# portico-backend speaks h2c: requests share connections, 2 per worker thread, one for each of
# its 4 workers.
protocol = "h2c"
h2_connections = 2

[[route]]
path_prefix = "/"
cluster = "app"
CONF

./build/backend/portico-backend --listen "unix:$RUN/app.sock:0600" --workers 4 \
  --admin 127.0.0.1:9902 &
BACKEND=$!
trap 'kill -TERM $BACKEND 2>/dev/null; wait $BACKEND 2>/dev/null; rm -rf "$RUN"' EXIT INT TERM
cat <<MSG

portico on 127.0.0.1:8080 (HTTP/1.1, h2c) and 127.0.0.1:8443 (TLS: h2, HTTP/1.1), in front of
portico-backend on $RUN/app.sock. Try:
  curl http://127.0.0.1:8080/                                # HTTP/1.1: hello world
  curl --http2-prior-knowledge http://127.0.0.1:8080/        # h2c, prior knowledge
  curl --http2 'http://127.0.0.1:8080/counter?id=1'          # h2c via Upgrade: {"counter":N}
  curl -k --http2 https://127.0.0.1:8443/                    # h2 over TLS
  curl -k --http1.1 https://127.0.0.1:8443/headers           # HTTP/1.1 over TLS: what the backend saw
  nghttp -nv http://127.0.0.1:8080/hello                     # nghttp2's client
  h2load -n100000 -c100 -m10 http://127.0.0.1:8080/          # load
  curl http://127.0.0.1:9901/metrics                         # portico's metrics (and /status)
  curl http://127.0.0.1:9902/metrics                         # portico-backend's, all workers
Ctrl-C stops both.

MSG
./build/proxy/portico -c "$RUN/portico.toml"
