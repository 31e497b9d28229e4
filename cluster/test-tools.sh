#!/usr/bin/env bash
# Installs what Parley's tests need and a fresh machine of this kind lacks (Debian packages and PyPI), and
# nothing when all is there. Called by cluster/test.sh (the README's test command) and so by .ci/run.
set -euo pipefail

as_root=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null 2>&1 || { echo "cluster/test-tools.sh: run as root (or with sudo) to install test tools" >&2; exit 1; }
  as_root=(sudo)
fi

need_apt=()
dpkg -s libsqlite3-dev >/dev/null 2>&1 || need_apt+=(libsqlite3-dev)
command -v sqlite3 >/dev/null 2>&1 || need_apt+=(sqlite3)
# The peer transport's tests check it with nghttp2's own HTTP/2 client.
command -v nghttp >/dev/null 2>&1 || need_apt+=(nghttp2-client)
# The deployed-cluster test (cluster/deployed/run.py): network namespaces, a user switch.
command -v ip >/dev/null 2>&1 || need_apt+=(iproute2)
command -v setpriv >/dev/null 2>&1 || need_apt+=(util-linux)
command -v useradd >/dev/null 2>&1 || need_apt+=(passwd)
# The chaos run (cluster/chaos/run.py): partitions are nft rules inside the nodes' namespaces.
command -v nft >/dev/null 2>&1 || need_apt+=(nftables)
# The deployed run makes the peer port's certificates with cluster/certs.sh (openssl).
command -v openssl >/dev/null 2>&1 || need_apt+=(openssl)
# RollingRestartTests runs cluster/rolling-restart.sh, which reads /status with curl.
command -v curl >/dev/null 2>&1 || need_apt+=(curl)
# The image's allocator (docker/Dockerfile preloads it): the deployed run checks its nodes load it.
[ -e /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 ] || need_apt+=(libjemalloc2)
# ReplayWindowTests moves the nodes' wall clocks with libfaketime.
[ -e /usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1 ] || need_apt+=(faketime)
if [ ${#need_apt[@]} -gt 0 ]; then
  echo "installing: ${need_apt[*]}"
  "${as_root[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${need_apt[@]}" >/dev/null
fi
# The dashboard test renders /dashboard in headless Chromium; it skips (saying why) only if this fails.
if ! command -v chromium >/dev/null 2>&1; then
  echo "installing: chromium"
  { "${as_root[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq chromium >/dev/null; } \
    || echo "chromium could not be installed: the dashboard test will be skipped"
fi
# The JavaScript SDK (issue 37): its offline tests run on Node's own test runner, its declarations are checked
# with tsc, and the browser suite (.ci/run) drives chromium over the DevTools protocol with Node's WebSocket.
need_js=()
command -v node >/dev/null 2>&1 || need_js+=(nodejs)
command -v tsc >/dev/null 2>&1 || need_js+=(node-typescript)
if [ ${#need_js[@]} -gt 0 ]; then
  echo "installing: ${need_js[*]}"
  { "${as_root[@]}" apt-get update -qq && DEBIAN_FRONTEND=noninteractive "${as_root[@]}" apt-get install -y -qq "${need_js[@]}" >/dev/null; } \
    || echo "${need_js[*]} could not be installed: the JavaScript SDK's tests will be skipped"
fi
# The deployment-files test parses docker/compose.yaml and cluster/k8s/ with PyYAML.
python3 -c 'import yaml' 2>/dev/null || python3 -m pip install -q pyyaml
# The edge's interop tests: a Python client (websockets) and the Autobahn cases (kosoku).
python3 -c 'import websockets, kosoku' 2>/dev/null || python3 -m pip install -q websockets kosoku \
  || echo "websockets/kosoku could not be installed: the edge interop tests will be skipped"
# The server API fuzz run (cluster/api/schemathesis.sh, run by .ci/run) needs schemathesis from PyPI.
command -v schemathesis >/dev/null 2>&1 || python3 -m pip install -q schemathesis
exit 0
