#!/usr/bin/env python3
"""Issue 35: how a node's CPU splits over its threads under the client-path load — the measure of whether a
node uses more than one core ("no single thread does more than 40 % of a node's CPU at 64 writers").

    cluster/bench/thread_share.py --parley PARLEY --load LOAD [--writers 64] [--seconds 10] [--size 100]
                                  [--perf perf.data]

Starts 3 `parley node` processes on loopback (64 shards, fsync on), lifts the app's budgets, drives them with
the client-path generator (`cluster/bench/client-load`: W WebSocket writers, one `sendMessage` in flight each,
a room each, spread over the nodes), and reads every thread's user + system time from
/proc/PID/task/TID/stat before and after the run. Prints, per node, its CPU over the run and its busiest
threads (name, share of the node's CPU, and how often per write it was switched out — its voluntary and
involuntary context switches from /proc/PID/task/TID/status, i.e. the thread hand-offs a write costs); then the
largest single-thread share of any node. Bounded: one run
of --seconds (+1 s warm-up); the nodes are killed at the end.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
sys.path.insert(0, os.path.join(ROOT, "cluster", "bench"))
from client_vs_jetstream import HZ, client_path_cluster, run_load  # noqa: E402
from protocol_session import kill_groups  # noqa: E402


def thread_files(pid, name):
    """(tid, text of /proc/PID/task/TID/<name>) for each thread of one process still there."""
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return
    for tid in tids:
        try:
            yield tid, open(f"/proc/{pid}/task/{tid}/{name}").read()
        except OSError:
            continue


def thread_switches(pid):
    """{tid: voluntary + involuntary context switches} of one process's threads."""
    return {tid: sum(int(line.split()[1]) for line in text.splitlines() if "ctxt_switches:" in line)
            for tid, text in thread_files(pid, "status")}


def thread_ticks(pid):
    """{tid: (name, user + system ticks)} of one process's threads."""
    threads = {}
    for tid, raw in thread_files(pid, "stat"):
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw.rsplit(")", 1)[1].split()
        threads[tid] = (name, int(fields[11]) + int(fields[12]))
    return threads


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parley", required=True)
    parser.add_argument("--load", required=True, help="the client-load generator")
    parser.add_argument("--writers", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--top", type=int, default=6)
    parser.add_argument("--perf", help="also record node 1 with `perf record -g` during the run into this file")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="parley-thread-share-")
    procs = []
    try:
        procs, http_ports, app_key = client_path_cluster(args.parley, work, [args.writers])
        before = {p.pid: thread_ticks(p.pid) for p in procs}
        switches_before = {p.pid: thread_switches(p.pid) for p in procs}
        recorder = None
        if args.perf:
            # Node 1's whole process, call graphs by frame pointer (cheap enough not to move the figures much).
            recorder = subprocess.Popen(["perf", "record", "-g", "-F", "1999", "-o", args.perf, "-p", str(procs[0].pid),
                                         "--", "sleep", str(args.seconds)],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        result = run_load(args.load, "parley", [f"ws://127.0.0.1:{p}/ws" for p in http_ports], args.writers,
                          args.seconds, args.size, [p.pid for p in procs], app_key)
        after = {p.pid: thread_ticks(p.pid) for p in procs}
        switches_after = {p.pid: thread_switches(p.pid) for p in procs}
        if recorder:
            recorder.wait(timeout=args.seconds + 60)
    finally:
        kill_groups(procs)
        shutil.rmtree(work, ignore_errors=True)

    print(f"{args.writers} writers, {args.seconds:.0f} s: {result['opsPerSecond']:,.0f} writes/s, "
          f"{result['cpuUsPerOp']:,.0f} µs of node CPU per write")
    largest = 0.0
    writes = max(1, result.get("allOps", result["ops"]))
    every_switch = 0
    for n, pid in enumerate(sorted(before), start=1):
        switched = {tid: count - switches_before[pid].get(tid, 0) for tid, count in switches_after[pid].items()}
        every_switch += sum(switched.values())
        used = []
        for tid, (name, ticks) in after[pid].items():
            spent = ticks - before[pid].get(tid, (name, 0))[1]
            if spent > 0:
                used.append((spent, name, tid))
        total = sum(s for s, _, _ in used)
        if total == 0:
            continue
        used.sort(reverse=True)
        largest = max(largest, used[0][0] / total)
        print(f"node {n}: {total / HZ:.2f} s of CPU over the run ({total / HZ / (args.seconds + 1):.2f} cores), "
              f"{len(used)} threads busy, {sum(switched.values()) / writes:.2f} context switches per write")
        for spent, name, tid in used[:args.top]:
            print(f"  {100 * spent / total:5.1f} %  {name} ({tid}), {switched.get(tid, 0) / writes:.2f} switches per write")
    print(json.dumps({"writers": args.writers, "largestThreadShare": round(largest, 3),
                      "contextSwitchesPerWrite": round(every_switch / writes, 2)}))


if __name__ == "__main__":
    main()
