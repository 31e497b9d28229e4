#!/usr/bin/env bash
# Side by side, in one session on one machine: `parley bench replicate` (3 real nodes, fsync on) and a
# 3-member etcd cluster (Debian's etcd-server, fsync on) doing puts of the same size at the same
# concurrency over the same number of connections (one per node). Prints a Markdown table of medians and
# ratios for docs/benchmarks.md. Loopback only; every run is bounded by --seconds.
#
#   LEVELS=1,64,1000 SECONDS_PER_RUN=10 RUNS=3 SIZE=64 cluster/bench/replicate-vs-etcd.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
LEVELS=${LEVELS:-1,64,1000}
SECONDS_PER_RUN=${SECONDS_PER_RUN:-10}
RUNS=${RUNS:-3}
SIZE=${SIZE:-64}
# A release build of parley; built here unless PARLEY_BIN names one.
PARLEY_BIN=${PARLEY_BIN:-}

need=()
for p in etcd-server etcd-client golang-go golang-etcd-server-dev; do dpkg -s "$p" >/dev/null 2>&1 || need+=("$p"); done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

work=$(mktemp -d)
cleanup() { pkill -f "etcd --name pb-e" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

echo "measuring the machine's floor (loopback hop, fdatasync)…" >&2
cc -O2 -o "$work/floor" cluster/bench/floor/floor.c
floor=$("$work/floor" "$work")
echo "$floor" >&2

echo "building the etcd load generator (Debian's etcd client sources)…" >&2
GO111MODULE=off GOPATH=/usr/share/gocode GOCACHE="$work/gocache" go build -o "$work/etcd-put" cluster/bench/etcd-put/main.go
if [ -z "$PARLEY_BIN" ]; then
  echo "building parley (release)…" >&2
  swift build -c release --product parley >&2
  PARLEY_BIN=.build/release/parley
fi

peers="pb-e1=http://127.0.0.1:23801,pb-e2=http://127.0.0.1:23802,pb-e3=http://127.0.0.1:23803"
for i in 1 2 3; do
  etcd --name "pb-e$i" --data-dir "$work/e$i" \
    --listen-client-urls "http://127.0.0.1:2379$i" --advertise-client-urls "http://127.0.0.1:2379$i" \
    --listen-peer-urls "http://127.0.0.1:2380$i" --initial-advertise-peer-urls "http://127.0.0.1:2380$i" \
    --initial-cluster "$peers" --initial-cluster-state new --log-level error >"$work/e$i.log" 2>&1 &
done
endpoints=127.0.0.1:23791,127.0.0.1:23792,127.0.0.1:23793
for _ in $(seq 100); do
  ETCDCTL_API=3 etcdctl --endpoints "$endpoints" endpoint health >/dev/null 2>&1 && break
  sleep 0.2
done

# CPU time (user + system, clock ticks) the three etcd members have used so far.
etcd_ticks() {
  local total=0
  for pid in $(pgrep -f "etcd --name pb-e"); do
    total=$((total + $(awk '{print $14 + $15}' "/proc/$pid/stat")))
  done
  echo "$total"
}
hz=$(getconf CLK_TCK)

echo "etcd runs…" >&2
for level in ${LEVELS//,/ }; do
  for _ in $(seq "$RUNS"); do
    before=$(etcd_ticks)
    line=$("$work/etcd-put" --endpoints "$endpoints" --clients "$level" --conns 3 --seconds "$SECONDS_PER_RUN" --size "$SIZE")
    after=$(etcd_ticks)
    # The members' CPU per put, as `parley bench replicate` reports its nodes' (the load generator's is in neither).
    python3 -c 'import json,sys; r=json.loads(sys.argv[1]); r["cpuUsPerOp"]=(int(sys.argv[3])-int(sys.argv[2]))/int(sys.argv[4])*1e6/max(1,r["ops"]); print(json.dumps(r))' \
      "$line" "$before" "$after" "$hz" | tee -a "$work/results.jsonl" >&2
  done
done
pkill -f "etcd --name pb-e" || true
wait 2>/dev/null || true

echo "parley runs…" >&2
"$PARLEY_BIN" bench replicate --concurrency "$LEVELS" --seconds "$SECONDS_PER_RUN" --runs "$RUNS" \
  --size "$SIZE" --json | grep '^{' | tee -a "$work/results.jsonl" >&2

python3 - "$work/results.jsonl" "$SIZE" "$floor" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")]
floor = json.loads(sys.argv[3])
def med(system, clients, key):
    vals = [r[key] for r in rows if r["system"] == system and r["clients"] == clients]
    return statistics.median(vals) if vals else float("nan")
print(f"| clients | parley ops/s | etcd ops/s | ratio | parley p50 / p99 ms | etcd p50 / p99 ms | server CPU µs/op parley / etcd |")
print(f"| --- | --- | --- | --- | --- | --- | --- |")
for c in sorted({r["clients"] for r in rows}):
    p, e = med("parley", c, "opsPerSecond"), med("etcd", c, "opsPerSecond")
    print(f"| {c} | {p:,.0f} | {e:,.0f} | {p / e:.2f}× | {med('parley', c, 'p50ms'):.2f} / {med('parley', c, 'p99ms'):.2f} "
          f"| {med('etcd', c, 'p50ms'):.2f} / {med('etcd', c, 'p99ms'):.2f} "
          f"| {med('parley', c, 'cpuUsPerOp'):.0f} / {med('etcd', c, 'cpuUsPerOp'):.0f} |")
# One client, one command in flight: a Raft command needs one sync (the leader's and the followers' at once)
# and 4 one-way hops when the client reached the leader (client, follower, back, client), 6 when it reached a
# follower (which forwards, and hears of the commit from the leader). Clients reach the leader one time in
# three. The floor leaves out all computing: no leader-based system (Raft, as both are) answers one client faster here.
e1 = med("etcd", 1, "opsPerSecond")
if e1 == e1:
    hop, s1, s3 = floor["hopUs"], floor["syncUs"], floor["sync3Us"]
    def ceiling(sync): return 1e6 / ((4 * hop + sync) / 3 + 2 * (6 * hop + sync) / 3)
    print(f"\nMachine floor: one-way loopback hop {hop:.0f} µs, fdatasync {s1:.0f} µs alone / {s3:.0f} µs three at once. "
          f"At one client no leader-based system here can exceed {ceiling(s3):,.0f} ops/s ({ceiling(s3) / e1:.2f}× etcd), "
          f"or {ceiling(s1):,.0f} ({ceiling(s1) / e1:.2f}×) were the three syncs not to slow each other.")
PY
