#!/bin/sh
# Makes the certificates conf/edge.toml names, for trying it out (never for production): a
# private CA, a self-signed certificate for each listener name, and a client certificate the
# CA signed for the mTLS upstream. Keys are mode 600.
#
#   sh conf/make-certificates.sh conf/certs && portico -t -c conf/edge.toml
set -eu
DIR=${1:-$(dirname "$0")/certs}
mkdir -p "$DIR"
cd "$DIR"
umask 077
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out "$1.key" 2>/dev/null; }
self_signed() { # NAME CN [SAN...]
  name=$1 cn=$2
  shift 2
  sans="DNS:$cn"
  for s in "$@"; do sans="$sans,DNS:$s"; done
  key "$name"
  openssl req -x509 -new -key "$name.key" -out "$name.pem" -days 30 -subj "/CN=$cn" \
    -addext "subjectAltName=$sans" 2>/dev/null
}
self_signed default localhost
self_signed example example.com www.example.com
self_signed api '*.api.example.net'
self_signed internal-ca 'Portico example CA'
key portico-client
openssl req -new -key portico-client.key -subj /CN=portico -out portico-client.csr 2>/dev/null
openssl x509 -req -in portico-client.csr -CA internal-ca.pem -CAkey internal-ca.key \
  -CAcreateserial -out portico-client.pem -days 30 2>/dev/null
rm -f portico-client.csr internal-ca.srl
chmod 644 ./*.pem
echo "certificates in $DIR"
