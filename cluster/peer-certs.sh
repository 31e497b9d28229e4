#!/bin/sh
# Makes the cluster's own CA and one certificate per node, for mutual TLS on the peer port (SPEC A3).
#
#   cluster/peer-certs.sh DIR NAME...      e.g.  cluster/peer-certs.sh ./peer-tls parley-1 parley-2 parley-3
#
# DIR gets ca.pem (every node trusts it: --peer-tls-ca), ca.key (it signs the nodes' certificates: keep it
# off the nodes once they have theirs), and NAME.pem and NAME.key for each NAME (--peer-tls-cert and
# --peer-tls-key; NAME, the node's host name, goes into the certificate's subjectAltName). What exists is
# kept: run it again with a new NAME to add a node, signed by the same CA. Keys are written 0600 by the user
# who runs it, so run it as the user the nodes run as (docker/compose.yaml runs it in the image, as the
# image's user). P-256 keys; the CA is valid 10 years, a node's certificate 825 days.
set -eu
umask 077
[ $# -ge 2 ] || { echo "usage: $0 DIR NAME..." >&2; exit 2; }
dir=$1
shift
mkdir -p "$dir"
cd "$dir"
if [ ! -s ca.pem ] || [ ! -s ca.key ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
        -days 3650 -subj "/CN=parley peer CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    chmod 0644 ca.pem
    echo "made the CA: $dir/ca.pem"
fi
for name in "$@"; do
    case $name in *[!A-Za-z0-9.-]*|"") echo "not a host name: $name" >&2; exit 2 ;; esac
    if [ -s "$name.pem" ] && [ -s "$name.key" ]; then
        echo "kept $dir/$name.pem"
        continue
    fi
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$name.key" -out "$name.csr" \
        -subj "/CN=$name" 2>/dev/null
    printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
        "extendedKeyUsage=serverAuth,clientAuth" "subjectAltName=DNS:$name" > "$name.ext"
    openssl x509 -req -in "$name.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 \
        -extfile "$name.ext" -out "$name.pem" 2>/dev/null
    rm -f "$name.csr" "$name.ext"
    chmod 0644 "$name.pem"
    echo "made $dir/$name.pem"
done
