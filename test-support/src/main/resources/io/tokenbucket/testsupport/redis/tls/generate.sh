#!/bin/sh
# Regenerates the test-only TLS material in this directory (CA + server cert for 127.0.0.1/localhost).
# Needs openssl 1.1.1+; validity 2000-01-01 .. 2125-01-01 so no machine clock falls outside it.
set -e
out=$(cd "$(dirname "$0")" && pwd)
w=$(mktemp -d); trap 'rm -rf "$w"' EXIT; cd "$w"
mkdir newcerts; : > index.txt; echo 01 > serial
cat > ca.cnf <<'CNF'
[ca]
default_ca = test
[test]
dir = .
database = index.txt
new_certs_dir = newcerts
serial = serial
default_md = sha256
policy = any
unique_subject = no
copy_extensions = none
[any]
commonName = supplied
[v3_ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
subjectKeyIdentifier = hash
[v3_server]
basicConstraints = CA:FALSE
keyUsage = critical,digitalSignature,keyEncipherment
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
CNF
openssl req -new -newkey rsa:2048 -nodes -keyout ca.key -subj "/CN=tokenbucket test CA" -out ca.csr
openssl ca -batch -config ca.cnf -selfsign -keyfile ca.key -in ca.csr -extensions v3_ca \
    -startdate 20000101000000Z -enddate 21250101000000Z -notext -out ca.crt
openssl req -new -newkey rsa:2048 -nodes -keyout server.key -subj "/CN=localhost" -out server.csr
openssl ca -batch -config ca.cnf -cert ca.crt -keyfile ca.key -in server.csr -extensions v3_server \
    -startdate 20000101000000Z -enddate 21250101000000Z -notext -out server.crt
openssl verify -CAfile ca.crt server.crt
cp ca.crt server.crt server.key "$out/"
