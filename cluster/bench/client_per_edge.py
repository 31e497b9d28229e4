#!/usr/bin/env python3
"""Issue 35: one writer through each node in turn, on two or more builds side by side — the one-writer A/B
that does not depend on where the room's shard leader lands.

    cluster/bench/client_per_edge.py --parley NEW,OLD --load LOAD [--rounds 3] [--seconds 5] [--im]

`client_vs_jetstream.py` connects its one writer to the first node, so its one-writer figure moves with the
placement of that writer's shard leader (a command through a follower's node takes a hop more). This starts
one 3-node cluster per build (64 shards, fsync on, budgets lifted, the same user and room in each), then, for
each round, each build, each node: one writer (`client-load --clients 1`: WebSocket `sendMessage`, or with
`--im` a logged-in device's `sendP2P`) through that node alone for --seconds. Prints every run and then, per
build and node, the median writes/s, p50 ms and server CPU µs per write, and whether that node led the
writer's shard (`parley_edge_commands_to_leader_total` moves only through a follower's node: the straight road).
Bounded: rounds × builds × 3 runs of --seconds + 1; the clusters are killed at the end.
"""
import argparse
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
sys.path.insert(0, os.path.join(ROOT, "cluster", "bench"))
from client_vs_jetstream import prepare_parley, run_load  # noqa: E402
from protocol_session import kill_groups, start_nodes, wait_ready  # noqa: E402


def straight_count(port):
    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
               if line.startswith("parley_edge_commands_to_leader_total{") and 'result="applied"' in line)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--parley", required=True, help="comma-separated parley binaries")
    ap.add_argument("--load", required=True, help="the client-load generator (cluster/bench/client-load)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=5)
    ap.add_argument("--im", action="store_true", help="one-to-one IM messages instead of room messages")
    args = ap.parse_args()
    builds = args.parley.split(",")
    key, secret = "bench", secrets.token_hex(16)
    work = tempfile.mkdtemp()
    procs, clusters = [], {}
    try:
        for i, build in enumerate(builds):
            folder = os.path.join(work, f"b{i}")
            os.makedirs(folder)
            started, http_ports, _, _ = start_nodes(build, folder, key, secret, shards=64)
            procs.extend(started)
            wait_ready(http_ports)
            prepare_parley(http_ports, key, secret, [1])
            clusters[i] = (started, http_ports)
        rows = []
        for _ in range(args.rounds):
            for i, build in enumerate(builds):
                started, http_ports = clusters[i]
                for node, port in enumerate(http_ports, start=1):
                    before = straight_count(port)
                    r = run_load(args.load, "parley", [f"ws://127.0.0.1:{port}/ws"], 1, args.seconds, 100,
                                 [p.pid for p in started], app_key=key, label=f"build {i + 1}", im=args.im)
                    straight = straight_count(port) - before
                    rows.append((i, node, r["opsPerSecond"], r["p50ms"], r["cpuUsPerOp"], straight > 0))
    finally:
        kill_groups(procs)
        shutil.rmtree(work, ignore_errors=True)
    print("| build | node | writes/s | p50 ms | CPU µs/write | straight road |")
    print("| --- | --- | --- | --- | --- | --- |")
    for i, build in enumerate(builds):
        for node in (1, 2, 3):
            mine = [r for r in rows if r[0] == i and r[1] == node]
            print(f"| {build} | {node} | {statistics.median(r[2] for r in mine):,.0f} | "
                  f"{statistics.median(r[3] for r in mine):.3f} | {statistics.median(r[4] for r in mine):,.0f} | "
                  f"{'yes' if any(r[5] for r in mine) else 'no'} |")


if __name__ == "__main__":
    main()
