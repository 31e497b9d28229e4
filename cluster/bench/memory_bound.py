#!/usr/bin/env python3
"""Issue 39 / SPEC D1: what a node's memory does as its rooms speak — the 100-room, 100,000-message run.

    cluster/bench/memory_bound.py --parley PARLEY --load LOAD [--rooms 100] [--messages 100000] [--size 1000]
        [--check-history] [--im | --mixed]

Starts 3 founding nodes on loopback (fsync on, 64 shards, default settings), creates `--rooms` rooms with a
writer each, and sends `--size`-byte messages through WebSockets (`client-load`, one writer per room, spread
over the nodes, 10-second rounds) until `--messages` were acknowledged. Prints every node's RSS before, after
the load, and after 15 quiet seconds, and what each node's `/status` says its memory holds (`memory`). With
`--check-history`, every room's history is then read whole through every node (`/v1/message/history`,
ascending pages of 100) and must hold every acknowledged message once, in order: what left memory is still
served. With `--im` the writers send one-to-one messages instead (each logs in as its user's IM device and
sends to the next writer's user): every message is then in two users' conversation logs, whose items each
shard keeps in memory only within `--im-log-window-bytes` (issue 38 item 5; `memory.imLogWindowBytes`). Bounded: the load stops at the count (or after 40 rounds); the nodes are killed at the end.
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
from client_vs_jetstream import prepare_parley, run_load  # noqa: E402
from protocol_session import kill_groups, rss_kib, start_nodes, wait_ready  # noqa: E402
from signed_api import http, signed  # noqa: E402


def rss_mb(pid):
    return rss_kib(pid) / 1024


def memory_status(port):
    code, text = http(f"http://127.0.0.1:{port}/status")
    if code != 200:
        return None
    return json.loads(text).get("memory")


def read_history(port, app_key, app_secret, room):
    """Every item of `room`'s history through the node at `port`, oldest first (ascending pages)."""
    base, items, start = f"http://127.0.0.1:{port}", [], 0
    while True:
        code, answer = signed(base, app_key, app_secret, "/v1/message/history",
                              {"roomId": room, "startTime": start, "limit": 100, "ascending": True, "types": ["text"]})
        if code != 200:
            raise RuntimeError(f"history of {room} through {port}: {code} {answer}")
        page = answer["data"]["items"]
        fresh = [i for i in page if not items or i["seq"] > items[-1]["seq"]]
        items += fresh
        if len(page) < 100 or not fresh:
            return items
        # startTime is exclusive on the time: items of one millisecond split over two pages are read again
        # and skipped by seq above.
        start = page[-1]["time"] - 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parley", required=True)
    parser.add_argument("--load", required=True, help="the client-load generator")
    parser.add_argument("--rooms", type=int, default=100)
    parser.add_argument("--messages", type=int, default=100000)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--check-history", action="store_true")
    parser.add_argument("--im", action="store_true",
                        help="one-to-one messages instead of room messages (issue 38 item 5: each writer logs in as its user's "
                             "IM device and sends to the next writer's user, so every message is in two users' logs)")
    parser.add_argument("--mixed", action="store_true",
                        help="rounds alternate between one-to-one messages and room messages: --rooms users with their logs "
                             "and --rooms busy rooms on the same nodes (issue 38's memory check)")
    parser.add_argument("--restart", action="store_true",
                        help="then kill -9 node 3, start it again and measure it once it is ready (a restart reads its log)")
    parser.add_argument("--node-option", action="append", default=[],
                        help="an option for every node, as --node-option=--history-window-bytes=0 (repeatable)")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="parley-memory-")
    procs, sent, rounds = [], 0, 0
    report = {"rooms": args.rooms, "size": args.size, "im": args.im, "mixed": args.mixed}
    try:
        app_key, app_secret = "bench", secrets.token_hex(16)
        procs, http_ports, _, _ = start_nodes(args.parley, work, app_key, app_secret, shards=64,
                                                  extra=args.node_option)
        wait_ready(http_ports)
        prepare_parley(http_ports, app_key, app_secret, [args.rooms])
        pids = [p.pid for p in procs]
        report["rssBeforeMB"] = [round(rss_mb(p)) for p in pids]
        began = time.time()
        while sent < args.messages and rounds < 40:
            im = args.im or (args.mixed and rounds % 2 == 0)
            r = run_load(args.load, "parley", [f"ws://127.0.0.1:{p}/ws" for p in http_ports], args.rooms, 10,
                         args.size, pids, app_key, im=im)
            sent += r["allOps"]
            if args.mixed:
                key = "imAcknowledged" if im else "roomAcknowledged"
                report[key] = report.get(key, 0) + r["allOps"]
            rounds += 1
        report["acknowledged"] = sent
        report["loadSeconds"] = round(time.time() - began)
        report["rssAfterLoadMB"] = [round(rss_mb(p)) for p in pids]
        time.sleep(15)
        report["rssAfterQuietMB"] = [round(rss_mb(p)) for p in pids]
        report["memory"] = [memory_status(p) for p in http_ports]
        if args.restart:
            # A restart opens every group from its log rows: what it holds then is bounded too.
            victim = procs[2]
            os.killpg(victim.pid, 9)
            victim.wait()
            log = open(os.path.join(work, "node-3.log"), "ab")
            procs[2] = subprocess.Popen(victim.args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
            wait_ready(http_ports)
            time.sleep(15)
            report["restartedNodeRssMB"] = round(rss_mb(procs[2].pid))
            report["restartedNodeMemory"] = memory_status(http_ports[2])
        if args.check_history:
            complete = 0
            for port in http_ports:
                total = 0
                for w in range(args.rooms):
                    items = read_history(port, app_key, app_secret, f"l{args.rooms}-room-{w}")
                    seqs = [i["seq"] for i in items]
                    if seqs != sorted(set(seqs)):
                        raise RuntimeError(f"room {w} through {port}: repeated or unordered seqs")
                    total += len(items)
                if total != sent:
                    raise RuntimeError(f"through {port}: {total} messages in history, {sent} acknowledged")
                complete += 1
            report["historyCompleteThroughNodes"] = complete
    finally:
        kill_groups(procs)
        shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(report, indent=1))


if __name__ == "__main__":
    main()
