#!/usr/bin/env python3
"""Issue 36: what a pre-send check (SPEC W3) costs the sender — the client path with the app's checks on
against off, on one cluster, interleaved; with `--after-events`, what after-event callbacks (SPEC W2: every
message copied to the app server) cost instead.

    cluster/bench/presend_cost.py --parley PARLEY --load LOAD [--receiver WEBHOOK_ALLOW] [--levels 1,64]
                                  [--seconds 10] [--runs 3] [--after-events [--target URL]]

`--target` points the app's callbacks at URL instead of the receiver — `https://203.0.113.9/parley` (TEST-NET-3:
nothing answers, each call waits out its timeout) stands for a dead app server; the table then shows what its
backlog costs the nodes' memory (resident set after each run, summed over the nodes) and the clients.

Starts a receiver that verifies each call's signature and answers `allow` at once — `--receiver`, the Go one
in cluster/bench/webhook-allow (built like client-load), so what is measured is Parley's cost; without it the
one an app developer starts, `cluster/webhooks/receiver.py` (Python's threading HTTP server, itself the
bottleneck at 64 writers on 2 cores) — and 3 `parley node` processes on
loopback (64 shards, fsync on, 127.0.0.1 allowed as a webhook target), lifts the app's budgets, then drives
them with the client-path generator (`cluster/bench/client-load`: W WebSocket writers, one `sendMessage` in
flight each, a room each) — alternately with the app's webhooks off and with `preSend.rooms: "all"`, waiting
for every node to have read the change before each run. Prints a table of medians: writes/s, p50 / p99 and
the nodes' CPU per write, off and on. Bounded: runs × levels × 2 runs of --seconds; everything is killed at
the end.
"""
import argparse
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
sys.path.insert(0, os.path.join(ROOT, "cluster", "bench"))
from client_vs_jetstream import median_of, prepare_parley, run_load  # noqa: E402
from protocol_session import free_ports, kill_groups, start_nodes, wait_ready  # noqa: E402
from signed_api import http, signed  # noqa: E402


def set_checks(base, app_key, app_secret, url, on, after_events=False):
    """Turns the app's pre-send checks on (every room) — or its after-event callbacks for messages — or off,
    then waits until every node calls (or stops calling) the receiver: the nodes read the settings with their
    registry, every two seconds, and shard leaders make the app's outbox at the next tick."""
    fields = ({"url": url, "events": ["room.message"], "enabled": on} if after_events else
              {"url": url, "preSend": {"rooms": "all"}, "enabled": on})
    code, answer = signed(base, app_key, app_secret, "/v1/app/setWebhooks", fields)
    if code != 200:
        raise RuntimeError(f"setWebhooks: {code} {answer}")
    time.sleep(5)


def resident_mib(pids):
    """The nodes' resident sets, summed (MiB)."""
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return total / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parley", required=True)
    parser.add_argument("--load", required=True, help="the client-load generator")
    parser.add_argument("--levels", default="1,64")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--receiver", help="the Go receiver (cluster/bench/webhook-allow); default: receiver.py")
    parser.add_argument("--after-events", action="store_true", help="after-event callbacks on/off, not pre-send checks")
    parser.add_argument("--target", help="the URL the app's callbacks go to (default: the receiver)")
    args = parser.parse_args()
    levels = [int(x) for x in args.levels.split(",")]
    work = tempfile.mkdtemp(prefix="parley-presend-")
    procs = []
    rows = []
    try:
        app_key, app_secret = "bench", secrets.token_hex(16)
        port = free_ports(1)[0]
        command = ([args.receiver, "--port", str(port), "--app-secret", app_secret] if args.receiver else
                   [sys.executable, os.path.join(ROOT, "cluster", "webhooks", "receiver.py"), "--port", str(port),
                    "--app-key", app_key, "--app-secret", app_secret])
        receiver = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(receiver)
        url = args.target or f"http://127.0.0.1:{port}/parley"
        os.environ["PARLEY_WEBHOOK_ALLOW"] = "127.0.0.1"  # the nodes inherit it
        started, http_ports, _, _ = start_nodes(args.parley, work, app_key, app_secret, shards=64)
        procs.extend(started)
        wait_ready(http_ports)
        prepare_parley(http_ports, app_key, app_secret, levels)
        base = f"http://127.0.0.1:{http_ports[0]}"
        ws = [f"ws://127.0.0.1:{p}/ws" for p in http_ports]
        pids = [p.pid for p in started]
        for _ in range(args.runs):
            for checks in (False, True):
                set_checks(base, app_key, app_secret, url, checks, args.after_events)
                for level in levels:
                    row = run_load(args.load, "parley", ws, level, args.seconds, args.size, pids, app_key,
                                   label="on" if checks else "off")
                    row["rssMiB"] = resident_mib(pids)
                    rows.append(row)
        code, text = http(f"http://127.0.0.1:{port}/calls")
        calls = (json.loads(text)["verified"] if args.receiver else text.count('"verified": true')) if code == 200 else 0
        print(f"the receiver answered {calls:,} verified calls", file=sys.stderr)
    finally:
        kill_groups(procs)
        shutil.rmtree(work, ignore_errors=True)

    def med(label, level, key):
        return median_of(rows, label, level, key)
    print("| writers | writes/s off / on (ratio) | p50 ms off / on | p99 ms off / on | node CPU µs/write off / on "
          "| nodes' RSS MiB off / on |")
    print("| --- | --- | --- | --- | --- | --- |")
    for level in levels:
        off, on = med("off", level, "opsPerSecond"), med("on", level, "opsPerSecond")
        print(f"| {level} | {off:,.0f} / {on:,.0f} ({on / off:.2f}×) | {med('off', level, 'p50ms'):.2f} / "
              f"{med('on', level, 'p50ms'):.2f} | {med('off', level, 'p99ms'):.2f} / {med('on', level, 'p99ms'):.2f} "
              f"| {med('off', level, 'cpuUsPerOp'):,.0f} / {med('on', level, 'cpuUsPerOp'):,.0f} "
              f"| {med('off', level, 'rssMiB'):,.0f} / {med('on', level, 'rssMiB'):,.0f} |")


if __name__ == "__main__":
    main()
