#!/usr/bin/env python3
"""Issue 35's headline: the path clients take, Parley against NATS JetStream, one load generator for both.

    cluster/bench/client_vs_jetstream.py --parley PARLEY --nats-server NATS_SERVER --load LOAD
        [--levels 1,64] [--seconds 10] [--runs 3] [--size 100]
    cluster/bench/client_vs_jetstream.py --parley PARLEY --baseline OLDER_PARLEY --load LOAD … [--per-connection 8]

With `--baseline` the other side is a second Parley cluster of an older build instead of JetStream: the A/B of
a change through the path clients take (interleaved the same way). `--im` (with `--baseline`) measures the IM
path instead: each writer's connection logs in as its user's IM device (`imLogin`) and sends one-to-one
messages (`sendP2P`) to the next writer's user, so each message is stored on the receiver's shard and its copy
relayed to the sender's.

(`cluster/bench/client-vs-jetstream.sh` installs what it needs, builds the generator and calls this.)
Both sides: 3 servers on loopback, replicated 3 ways, every write synced to disk before it is acknowledged
(Parley: fsync on; JetStream: an R3 file stream, `sync_interval: always`). The generator (`client-load`)
runs W writers, each with one message in flight and a room (a subject) of its own, spread round-robin over the
three servers, each awaiting its acknowledgement (Parley's `sendMessage` answer over a WebSocket, JetStream's
PubAck). Runs are interleaved (for each run and level: one system, then the other, the first one alternating
from run to run, with --settle-seconds between them: a cluster that just took 64 writers goes on checkpointing
and flushing for a while, and the system measured right after it came out behind in 16 of 22 A/B pairs of
session 36 when the order was fixed — use an even --runs for a fair median); the servers' CPU (user
+ system, /proc) over a run is divided by the writes acknowledged in it. Prints a Markdown table of medians
for docs/benchmarks.md. Bounded: every run stops after --seconds (+1 s warm-up); the servers are killed at
the end.

`--writer-at leader` / `--writer-at follower`: the first writer (the only one at one writer) connects to the
server that leads its room's shard (JetStream: the ROOMS stream's leader) or to one that does not, on both
sides, asked again before every run. By default the writers start at the first server, and where each side's
leader happens to be decides whether a lone writer's messages cross one more hop: JetStream's stream leader
lands on any of the three servers at random, Parley's shard leader on the first-ranked replica, so the
one-writer ratio moved by the placement rather than by either system (session 39, docs/benchmarks.md). Each
run's row says where its leader was before and after it (`leaderMoved`: a leader change during the run).
"""
import argparse
import json
import os
import secrets
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
from protocol_session import free_ports, kill_groups, start_nodes, wait_ready  # noqa: E402
from signed_api import lift_budgets, signed  # noqa: E402

HZ = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError, ValueError):
            pass
    return total / HZ


def start_jetstream(nats_server, work):
    ports = free_ports(6)
    client, route = ports[:3], ports[3:]
    procs = []
    for i in range(3):
        store = os.path.join(work, f"js{i + 1}")
        routes = ", ".join(f"nats://127.0.0.1:{route[j]}" for j in range(3) if j != i)
        conf = os.path.join(work, f"js{i + 1}.conf")
        with open(conf, "w") as f:
            f.write(f"""server_name: js{i + 1}
listen: 127.0.0.1:{client[i]}
jetstream {{ store_dir: "{store}", sync_interval: always }}
cluster {{ name: bench, listen: 127.0.0.1:{route[i]}, routes: [{routes}] }}
""")
        log = open(os.path.join(work, f"js{i + 1}.log"), "ab")
        procs.append(subprocess.Popen([nats_server, "-c", conf], stdout=log, stderr=subprocess.STDOUT,
                                      start_new_session=True))
    return procs, [f"nats://127.0.0.1:{p}" for p in client]


def prepare_parley(http_ports, app_key, app_secret, levels, budgeted=False):
    base = f"http://127.0.0.1:{http_ports[0]}"
    # Neither messages nor each connection's requests are budgeted here (A1 measures abuse, not replication);
    # a build older than peer protocol 6 keeps its fixed 100/s per connection: the generator counts the sends
    # that waited for it.
    lift_budgets(base, app_key, app_secret, messages=999999 if budgeted else 1000000)
    for level in levels:
        for w in range(level):
            account = f"l{level}-w{w}"
            signed(base, app_key, app_secret, "/v1/user/create", {"accid": account, "token": f"{account}-token"})
            code, answer = signed(base, app_key, app_secret, "/v1/room/create",
                                  {"roomId": f"l{level}-room-{w}", "creator": account, "name": "Bench"})
            if code != 200:
                raise RuntimeError(f"room/create: {code} {answer}")
    time.sleep(3)  # the edges learn the app's users from meta, a moment behind the API


def room_leader(port, room, app_key):
    """The node that leads `room`'s shard, as the node at `port` places it (waits up to 10 s for one)."""
    for _ in range(50):
        node = json.load(urllib.request.urlopen(
            f"http://127.0.0.1:{port}/placement/rooms/{room}?app={app_key}", timeout=5)).get("leader") or 0
        if node:
            return node
        time.sleep(0.2)
    raise RuntimeError(f"no leader for {room}")


def client_path_cluster(parley, work, levels):
    """The client-path benches' cluster: 3 `parley node`s of 64 shards, ready, the app's budgets lifted and its
    writers' users and rooms made for `levels`. Returns (processes, client ports, app key); stops the nodes
    itself when it fails."""
    app_key, app_secret = "bench", secrets.token_hex(16)
    procs, http_ports, _, _ = start_nodes(parley, work, app_key, app_secret, shards=64)
    try:
        wait_ready(http_ports)
        prepare_parley(http_ports, app_key, app_secret, levels)
    except BaseException:
        kill_groups(procs)
        raise
    return procs, http_ports, app_key


def run_load(load, mode, servers, level, seconds, size, pids, app_key=None, label=None, per_connection=1, im=False,
             team=False):
    args = [load, "--mode", mode, "--servers", ",".join(servers), "--clients", str(level), "--seconds", str(seconds),
            "--size", str(size)]
    if mode == "parley":
        args += ["--app", app_key, "--level", f"l{level}-", "--per-connection", str(per_connection)]
        if im:
            args += ["--im"]
        if team:
            args += ["--team"]
    before = cpu_seconds(pids)
    line = subprocess.run(args, capture_output=True, text=True, timeout=seconds + 120)
    after = cpu_seconds(pids)
    if line.returncode != 0:
        raise RuntimeError(f"{mode} at {level}: {line.stderr[-500:]}")
    r = json.loads(line.stdout.strip().splitlines()[-1])
    r["cpuUsPerOp"] = (after - before) * 1e6 / max(1, r["allOps"])
    if label:
        r["system"] = label
    print(json.dumps(r), file=sys.stderr, flush=True)
    return r


def median_of(rows, system, level, key):
    """The median of `key` over the runs of `system` at `level` writers (NaN when there are none)."""
    values = [r[key] for r in rows if r["system"] == system and r["clients"] == level]
    return statistics.median(values) if values else float("nan")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parley", required=True)
    parser.add_argument("--nats-server")
    parser.add_argument("--baseline", help="an older parley to compare with, instead of JetStream")
    parser.add_argument("--load", required=True, help="the client-load generator")
    parser.add_argument("--levels", default="1,64")
    parser.add_argument("--seconds", type=float, default=10)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--settle-seconds", type=float, default=3,
                        help="a pause before each load, so the system measured before it has settled")
    parser.add_argument("--size", type=int, default=100)
    parser.add_argument("--budgeted", action="store_true",
                        help="Parley: send budgets checked (999,999/s, never reached) instead of off, so the leader's "
                             "check runs on each message as in production (every write goes to its leader by call "
                             "either way since session 39; before, an unbudgeted one was passed on inside Raft)")
    parser.add_argument("--per-connection", type=int, default=1,
                        help="Parley: writers sharing one WebSocket, their sends in flight together (1-10)")
    parser.add_argument("--im", action="store_true",
                        help="with --baseline: one-to-one messages (imLogin, sendP2P to the next writer) instead of "
                             "room messages — the IM path through the edge (issue 35)")
    parser.add_argument("--team", action="store_true",
                        help="with --baseline: team messages (imLogin, each writer's own two-member team, "
                             "sendTeamMessage) instead of room messages")
    parser.add_argument("--node-option", action="append", default=[],
                        help="an option for every node of --parley, as --node-option=--sqlite-cache-bytes=8388608")
    parser.add_argument("--baseline-node-option", action="append", default=[],
                        help="the same for the --baseline nodes (the A/B of a setting: one binary, two options)")
    parser.add_argument("--preload",
                        help="a shared library the --parley nodes start with in LD_PRELOAD (--preload "
                             "libjemalloc.so.2, as the image runs them; --node-option=--allocator=jemalloc has a node "
                             "preload it for itself: docs/operations.md, Memory allocator)")
    parser.add_argument("--baseline-preload", help="the same for the --baseline nodes")
    parser.add_argument("--nodes", type=int, default=3,
                        help="with --baseline: nodes in each Parley cluster (3 replicas a shard, so from 4 on some "
                             "writers' edges hold no replica of their room's or receiver's shard; JetStream runs 3)")
    parser.add_argument("--writer-at", choices=("first", "leader", "follower"), default="first",
                        help="the server the first writer connects to: the first (default), or on each side the "
                             "one leading its room's shard (JetStream: the stream's leader), or one that does not")
    args = parser.parse_args()
    if not (args.nats_server or args.baseline):
        parser.error("--nats-server or --baseline")
    if args.nodes != 3 and not args.baseline:
        parser.error("--nodes compares two Parley builds (--baseline): the JetStream cluster has 3 servers")
    if (args.im or args.team) and not args.baseline:
        parser.error("--im and --team compare two Parley builds (--baseline)")
    other = "baseline" if args.baseline else "jetstream"
    levels = [int(x) for x in args.levels.split(",")]
    work = tempfile.mkdtemp(prefix="parley-vs-jetstream-")
    procs = []
    try:
        app_key, app_secret = "bench", secrets.token_hex(16)

        def parley_cluster(binary, folder, extra, preload):
            os.makedirs(folder)
            started, http_ports, _, _ = start_nodes(binary, folder, app_key, app_secret, count=args.nodes, shards=64, extra=extra,
                                                    env={"LD_PRELOAD": preload} if preload else None)
            procs.extend(started)
            wait_ready(http_ports)
            prepare_parley(http_ports, app_key, app_secret, levels, budgeted=args.budgeted)
            return started, [f"ws://127.0.0.1:{p}/ws" for p in http_ports]

        def placed(urls, leader_index, level):
            """The servers in the order the generator deals them out, the chosen one first; and its leader."""
            if args.writer_at == "first":
                return urls, None
            leader = leader_index(level)
            first = leader if args.writer_at == "leader" else (leader + 1) % len(urls)
            return urls[first:] + urls[:first], leader

        def parley_leader(urls):
            def leader_index(level):
                # Node ids are 1 … N in the order of `urls`.
                return room_leader(urls[0].split(":")[2].split("/")[0], f"l{level}-room-0", app_key) - 1
            return leader_index

        def jetstream_leader(level):
            name = subprocess.run([args.load, "--stream-leader", "--mode", "jetstream", "--servers",
                                   ",".join(other_urls)], capture_output=True, text=True, check=True,
                                  timeout=30).stdout.strip()
            return int(name.removeprefix("js")) - 1  # server_name js1 … js3, in the order of the urls
        if args.baseline:
            other_procs, other_urls = parley_cluster(args.baseline, os.path.join(work, "baseline"),
                                                   args.baseline_node_option, args.baseline_preload)
        else:
            other_procs, other_urls = start_jetstream(args.nats_server, work)
            procs.extend(other_procs)
            subprocess.run([args.load, "--create-stream", "--mode", "jetstream", "--servers", ",".join(other_urls)],
                           check=True, timeout=60)
        parley_procs, ws = parley_cluster(args.parley, os.path.join(work, "parley"), args.node_option, args.preload)
        rows = []
        other_leader = parley_leader(other_urls) if args.baseline else jetstream_leader

        def placed_run(urls, leader_index, level, load):
            servers, before = placed(urls, leader_index, level)
            row = load(servers)
            if before is not None:
                after = leader_index(level)
                row.update(writerAt=args.writer_at, leaderBefore=before + 1, leaderAfter=after + 1,
                           leaderMoved=after != before)
                print(json.dumps({k: row[k] for k in ("system", "clients", "leaderBefore", "leaderAfter")}),
                      file=sys.stderr, flush=True)
            return row

        def run_other(level):
            time.sleep(args.settle_seconds)
            if args.baseline:
                return placed_run(other_urls, other_leader, level, lambda servers: run_load(
                    args.load, "parley", servers, level, args.seconds, args.size, [p.pid for p in other_procs],
                    app_key, label="baseline", per_connection=args.per_connection, im=args.im, team=args.team))
            return placed_run(other_urls, other_leader, level, lambda servers: run_load(
                args.load, "jetstream", servers, level, args.seconds, args.size, [p.pid for p in other_procs]))

        def run_parley(level):
            time.sleep(args.settle_seconds)
            return placed_run(ws, parley_leader(ws), level, lambda servers: run_load(
                args.load, "parley", servers, level, args.seconds, args.size, [p.pid for p in parley_procs],
                app_key, per_connection=args.per_connection, im=args.im, team=args.team))
        for run in range(args.runs):
            for level in levels:
                order = (run_other, run_parley) if run % 2 == 0 else (run_parley, run_other)
                for measure in order:
                    rows.append(measure(level))
    finally:
        kill_groups(procs)
        shutil.rmtree(work, ignore_errors=True)

    def med(system, level, key):
        return median_of(rows, system, level, key)
    print(f"| writers | parley writes/s | {other} writes/s | ratio | parley p50 / p99 ms | {other} p50 / p99 ms "
          f"| server CPU µs/write parley / {other} (ratio) | parley sends that waited for the connection budget |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for level in levels:
        p, o = med("parley", level, "opsPerSecond"), med(other, level, "opsPerSecond")
        pc, oc = med("parley", level, "cpuUsPerOp"), med(other, level, "cpuUsPerOp")
        print(f"| {level} | {p:,.0f} | {o:,.0f} | {p / o:.2f}× | {med('parley', level, 'p50ms'):.2f} / "
              f"{med('parley', level, 'p99ms'):.2f} | {med(other, level, 'p50ms'):.2f} / "
              f"{med(other, level, 'p99ms'):.2f} | {pc:,.0f} / {oc:,.0f} ({pc / oc:.2f}×) "
              f"| {med('parley', level, 'budgetWaits'):,.0f} |")
    if args.writer_at != "first":
        for system in ("parley", other):
            moved = sum(1 for r in rows if r["system"] == system and r.get("leaderMoved"))
            print(f"\n{system}: the first writer at the {args.writer_at} of its room's "
                  f"{'stream' if system == 'jetstream' else 'shard'}; the leader moved during {moved} of "
                  f"{sum(1 for r in rows if r['system'] == system)} runs")

if __name__ == "__main__":
    main()
