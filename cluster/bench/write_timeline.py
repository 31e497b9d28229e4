#!/usr/bin/env python3
"""Issue 35: where one writer's message spends its time, stage by stage, on three real nodes.

    cluster/bench/write_timeline.py --parley PARLEY --load LOAD [--seconds 3]

Starts 3 `parley node` processes on loopback (64 shards, fsync on), one writer (`cluster/bench/client-load`,
one `sendMessage` in flight, its own room) connected to the node that leads its room's shard (the shortest
road: through any other node the command crosses one more link, which `client_vs_jetstream.py --writer-at`
measures), and records a few system calls of the three nodes with `perf record` of their tracepoints (read,
write, writev, fdatasync, and SQLite's fcntl locks and WAL pwrites: timestamps only — far lighter than `perf trace` or strace, which
stretched every call here). Each message starts when the writer's connection loop reads its frame (the only
223-byte reads of that socket); the script then prints, for every stage, the median time after that start at
which the next such event happened: the hand-over to the Raft loop (an eventfd write), the leader's appends
out, the followers reading them, each node's first SQLite lock (its transaction begins), WAL write and
`fdatasync` start and end, a follower's first write after it (its acknowledgement), the leader reading the first
acknowledgement, the answer's hand-over to the connection's loop and the answer written to the socket.

Needs root and `perf` with the syscalls tracepoints. Bounded: one load run of --seconds (+1 s warm-up); the
nodes are killed at the end. The timings are of this machine under this one load; read them as where the time
goes, not as a benchmark (the benchmarks are client_vs_jetstream.py's).
"""
import argparse
import bisect
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
sys.path.insert(0, os.path.join(ROOT, "cluster", "bench"))
from client_vs_jetstream import client_path_cluster, room_leader, run_load  # noqa: E402
from protocol_session import kill_groups  # noqa: E402

EVENTS = ["syscalls:sys_enter_read", "syscalls:sys_exit_read", "syscalls:sys_enter_write",
          "syscalls:sys_enter_writev", "syscalls:sys_enter_fdatasync", "syscalls:sys_exit_fdatasync",
          "syscalls:sys_enter_fcntl", "syscalls:sys_enter_pwrite64"]
# The writer's frame: a 100-byte body in the generator's sendMessage, masked, as the socket delivers it.
FRAME_BYTES = 223
# A follower's acknowledgement of an append, as the leader's Raft loop reads it from a peer link.
ACK_BYTES = 29


def threads(pids):
    """tid -> (node number, thread name) of the nodes' threads now."""
    named = {}
    for node, pid in enumerate(pids, start=1):
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    named[int(tid)] = (node, f.read().strip())
            except OSError:
                pass
    return named


def parse(script_text, named):
    """The recorded events as (ms, node, thread name, tid, event, arguments), in time order."""
    events = []
    for line in script_text.splitlines():
        m = re.match(r"\s*(\d+)\s+([\d.]+):\s+syscalls:(\S+):\s*(.*)", line)
        if m:
            tid, ts, event, args = m.groups()
            node, name = named.get(int(tid), (0, "?"))
            events.append((float(ts) * 1000, node, name, int(tid), event, args))
    events.sort()
    return events


def fd_of(args):
    m = re.search(r"fd: (0x[0-9a-f]+)", args)
    return int(m.group(1), 16) if m else -1


def timeline(events, leader):
    """Stage name -> times (ms) of that stage's events."""
    reads, opened = [], {}
    syncs = {}
    open_sync = {}
    for t, node, name, tid, event, args in events:
        if event == "sys_enter_read":
            opened[tid] = (t, fd_of(args))
        elif event == "sys_exit_read" and tid in opened:
            start, fd = opened.pop(tid)
            reads.append((start, node, tid, fd, int(args, 16) if args.startswith("0x") else int(args)))
        elif event == "sys_enter_fdatasync":
            open_sync[tid] = t
        elif event == "sys_exit_fdatasync" and tid in open_sync:
            syncs.setdefault(node, {}).setdefault(tid, []).append((open_sync.pop(tid), t))
    frames = [r for r in reads if r[1] == leader and r[4] == FRAME_BYTES]
    if not frames:
        raise RuntimeError("no frame of the writer was read by the node it connected to")
    conn_tid, conn_fd = frames[0][2], frames[0][3]
    stages = {}
    writes = [(t, tid, fd_of(args), event) for t, node, name, tid, event, args in events
              if event in ("sys_enter_write", "sys_enter_writev")]
    stages["connection loop: hands the command on (eventfd write)"] = [
        t for t, tid, fd, _ in writes if tid == conn_tid and fd != conn_fd]
    # The leader's Raft loop: the thread that syncs there most.
    raft_tid = max(syncs.get(leader, {}).items(), key=lambda kv: len(kv[1]))[0]
    def calls(tid, *names):
        return [t for t, node, name, tid2, event, args in events if tid2 == tid and event in names]
    stages["raft loop (leader): woken"] = [r[0] for r in reads if r[2] == raft_tid and r[4] == 8]
    stages["raft loop (leader): first writev (appends out)"] = [
        t for t, tid, fd, ev in writes if tid == raft_tid and ev == "sys_enter_writev"]
    stages["raft loop (leader): SQLite begins (first fcntl)"] = calls(raft_tid, "sys_enter_fcntl")
    stages["raft loop (leader): fdatasync starts"] = [a for a, _ in syncs[leader][raft_tid]]
    stages["raft loop (leader): fdatasync ends"] = [b for _, b in syncs[leader][raft_tid]]
    for node in sorted(syncs):
        if node == leader:
            continue
        tid = max(syncs[node].items(), key=lambda kv: len(kv[1]))[0]
        stages[f"node {node}: reads the append"] = [r[0] for r in reads if r[2] == tid and r[4] > 200]
        stages[f"node {node}: SQLite begins (first fcntl)"] = calls(tid, "sys_enter_fcntl")
        stages[f"node {node}: WAL frames written (pwrite)"] = calls(tid, "sys_enter_pwrite64")
        stages[f"node {node}: fdatasync starts"] = [a for a, _ in syncs[node][tid]]
        stages[f"node {node}: fdatasync ends"] = [b for _, b in syncs[node][tid]]
        stages[f"node {node}: writes its acknowledgement (its first write)"] = calls(
            tid, "sys_enter_write", "sys_enter_writev")
    stages["raft loop (leader): reads an acknowledgement"] = [
        r[0] for r in reads if r[2] == raft_tid and r[4] == ACK_BYTES]
    stages["raft loop (leader): hands the answer on (eventfd write)"] = [
        t for t, tid, fd, ev in writes if tid == raft_tid and ev == "sys_enter_write"]
    stages["connection loop: woken for the answer"] = [r[0] for r in reads if r[2] == conn_tid and r[4] == 8]
    stages["connection loop: writes to the client"] = [t for t, tid, fd, _ in writes if tid == conn_tid and fd == conn_fd]
    return [r[0] for r in frames], stages


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parley", required=True)
    parser.add_argument("--load", required=True, help="the client-load generator")
    parser.add_argument("--seconds", type=float, default=3)
    parser.add_argument("--dump", type=int, default=0,
                        help="also print every recorded event of the nodes' threads for this many messages")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="write-timeline-")
    procs = []
    try:
        procs, http_ports, app_key = client_path_cluster(args.parley, work, [1])
        time.sleep(10)  # leader balance settles before the leader is asked
        leader = room_leader(http_ports[0], "l1-room-0", app_key)
        order = [leader - 1] + [i for i in range(3) if i != leader - 1]
        named = threads([p.pid for p in procs])
        data = os.path.join(work, "perf.data")
        record = subprocess.Popen(["perf", "record", "-q", "-o", data, "-e", ",".join(EVENTS), "-p",
                                   ",".join(str(p.pid) for p in procs), "--", "sleep", str(args.seconds)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        result = run_load(args.load, "parley", [f"ws://127.0.0.1:{http_ports[i]}/ws" for i in order], 1,
                          args.seconds, 100, [p.pid for p in procs], app_key)
        record.wait(timeout=60)
        after = room_leader(http_ports[0], "l1-room-0", app_key)
        text = subprocess.run(["perf", "script", "-i", data, "-F", "tid,time,event,trace"], capture_output=True,
                              text=True, check=True, timeout=300).stdout
    finally:
        kill_groups(procs)
    try:
        events = parse(text, named)
        frames, stages = timeline(events, leader)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    frames = frames[20:-20]  # not the run's first and last messages
    middle = len(frames) // 2
    for start in frames[middle:middle + args.dump]:
        # One message's events, as the nodes' threads made them, until the next frame (at most 2 ms).
        print(f"message at {start:.3f} ms:")
        for t, node, name, tid, event, arguments in events:
            if start <= t < start + 2 and not (t > start and node == leader and event == "sys_exit_read"
                                               and arguments.strip() in (hex(FRAME_BYTES), str(FRAME_BYTES))):
                print(f"  {(t - start) * 1000:7.0f} µs  node {node} {name:<16} {event:<22} {arguments[:60]}")
        print()
    print(f"one writer at node {leader}, its room's shard leader ({after} after the run); "
          f"{result['opsPerSecond']:,.0f} writes/s under the recording, p50 {result['p50ms']:.3f} ms; "
          f"{len(frames)} messages")
    print("| stage | median µs after the frame was read |")
    print("| --- | --- |")
    rows = []
    for name, times in stages.items():
        times = sorted(times)
        after_frame = []
        for start in frames:
            i = bisect.bisect_left(times, start)
            if i < len(times) and times[i] - start < 3:  # the same message's, not a later one's
                after_frame.append(times[i] - start)
        if after_frame:
            rows.append((statistics.median(after_frame) * 1000, name))
    for micros, name in sorted(rows):
        print(f"| {name} | {micros:,.0f} |")


if __name__ == "__main__":
    main()
