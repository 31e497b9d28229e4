#!/bin/sh
# Makes a private CA and certificates from it (openssl, P-256 keys):
#
#   cluster/certs.sh peer DIR NAME...     e.g.  cluster/certs.sh peer ./peer-tls parley-1 parley-2 parley-3
#   cluster/certs.sh client DIR NAME...   e.g.  cluster/certs.sh client ./client-tls chat.example.com localhost
#
# Both put the CA in DIR/ca.pem (what is trusted) and DIR/ca.key (it signs: keep it off the nodes once the
# certificates are made), the CA valid 10 years, each certificate 825 days. What exists is kept: run it again
# with a new NAME to add one under the same CA. Keys are written 0600 by the user who runs it, so run it as the
# user the nodes run as (docker/compose.yaml runs it in the image, as the image's user).
#
# peer (SPEC A3, mutual TLS on the peer port): one certificate per node, NAME.pem and NAME.key (--peer-tls-cert,
#   --peer-tls-key; NAME, the node's host name, in its subjectAltName), for server and client auth; every node
#   trusts ca.pem (--peer-tls-ca).
# client (SPEC T1, HTTPS and WSS on the client port): one certificate valid for every NAME, client.pem and
#   client.key (--tls-cert, --tls-key); an IPv4 or IPv6 address goes in as an address, anything else as a DNS
#   name (a wildcard needs two labels after its star). Clients trust ca.pem (the SDK's
#   EdgeTLS.certificateAuthority(pemFile:), curl --cacert, SSL_CERT_FILE); delete client.pem to make it again
#   for other names. For clients on the internet use a public CA's certificate instead: write it over
#   client.pem and client.key and the nodes serve it to their next connection, without a restart.
set -eu
umask 077
usage() { echo "usage: $0 peer|client DIR NAME..." >&2; exit 2; }
[ $# -ge 3 ] || usage
kind=$1
dir=$2
shift 2
case $kind in peer|client) ;; *) usage ;; esac
mkdir -p "$dir"
cd "$dir"
if [ ! -s ca.pem ] || [ ! -s ca.key ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout ca.key -out ca.pem \
        -days 3650 -subj "/CN=parley $kind CA" \
        -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
    chmod 0644 ca.pem
    echo "made the CA: $dir/ca.pem"
fi

# sign FILE CN USAGES NAMES: FILE.key and FILE.pem, signed by the CA.
sign() {
    openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
    printf '%s\n' "basicConstraints=critical,CA:FALSE" "keyUsage=critical,digitalSignature" \
        "extendedKeyUsage=$3" "subjectAltName=$4" > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.pem -CAkey ca.key -CAcreateserial -days 825 -extfile "$1.ext" \
        -out "$1.pem" 2>/dev/null
    rm -f "$1.csr" "$1.ext"
    chmod 0644 "$1.pem"
    echo "made $dir/$1.pem for $4"
}

if [ "$kind" = peer ]; then
    for name in "$@"; do
        case $name in *[!A-Za-z0-9.-]*|"") echo "not a host name: $name" >&2; exit 2 ;; esac
        if [ -s "$name.pem" ] && [ -s "$name.key" ]; then
            echo "kept $dir/$name.pem"
            continue
        fi
        sign "$name" "$name" "serverAuth,clientAuth" "DNS:$name"
    done
    exit 0
fi
if [ -s client.pem ] && [ -s client.key ]; then
    echo "kept $dir/client.pem"
    exit 0
fi
names=""
for name in "$@"; do
    case $name in
        *[!A-Za-z0-9.:*-]*|"") echo "not a host name or address: $name" >&2; exit 2 ;;
        *:*) entry="IP:$name" ;;      # IPv6
        *[!0-9.]*) entry="DNS:$name" ;;
        *) entry="IP:$name" ;;        # IPv4
    esac
    names="${names:+$names,}$entry"
done
sign client "$1" serverAuth "$names"
