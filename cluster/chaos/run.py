#!/usr/bin/env python3
"""Fault injection on real `parley node` processes, in the Jepsen tradition (issue 16).

    sudo python3 cluster/chaos/run.py --parley .build/debug/parley [--nodes 3] [--schedules 10] [--seed 1]
    sudo python3 cluster/chaos/run.py --parley … --nodes 5 --replay 1004     # one schedule again, by its seed

Each schedule starts a fresh cluster, every node in a network namespace of its own on a bridge, the clients
in another. Clients on every edge send messages with unique clientMessageIds into a few rooms over the
WebSocket protocol (docs/protocol.md), record every answer (ok / error / unknown) and every event, and on a
disconnect re-enter on the next address with `lastSeq`, as the SDK does. Meanwhile the schedule (drawn from
its seed) applies faults: kill -9 and restart, SIGSTOP pauses, partitions (nft rules in the nodes'
namespaces: isolate a node, split the cluster, one-way loss — each proven to cut the peer traffic), a
full-cluster restart, several at once. Then it heals, measures how long until every shard has a leader,
lets the clients drain, stops the nodes and checks (`check_schedule`):

- every acknowledged message is in its room's history exactly once, at its acknowledged seq, and the history
  is identical on every replica (read from each stopped node with `parley storage history`);
- a message answered with a definite error is absent;
- every reader saw strictly increasing seqs, no duplicates, every hole filled or named by a `gap` event;
- no session of a client whose edge stayed up was ended without `status: lost` (no bare 13100, no close);
- every shard had a leader again soon after the heal (recorded; the bound is --recovery-bound);
- no node crashed (exit status, fatal lines in the logs);
- issue 19 (`im_workload.py`): one-to-one messages between users on different shards, sent through the signed
  API during the faults: each acknowledged one is in the receiver's log once at its seq, and — after the
  effects relay between shard leaders caught up — in the sender's log once; none refused is stored;
- issue 36 (SPEC W2): the app's after-event callbacks go to `cluster/webhooks/receiver.py` in the clients'
  namespace: after the heal, every acknowledged message reached it at least once (a repeat is dropped by its
  id), and each room's messages arrived in their seq order.

A failure prints the schedule's seed and the command that replays it. Bounded: every wait has a deadline and
the run stops after --budget-minutes whatever happens. Figures (per fault kind, acknowledged, lost,
duplicated, reordered, sessions lost, recovery p50/p99) are printed at the end and, with --report, written as
JSON (docs/reliability.md quotes them).
"""
import argparse
import asyncio
import concurrent.futures
import json
import os
import random
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netlab import Failure, Lab, enter_namespace, leave_namespace, netns, sh, wait_for  # noqa: E402
from signed_api import http, signed  # noqa: E402
from im_workload import ImWorkload  # noqa: E402
from workload import Workload  # noqa: E402

PREFIX = "pch"
SUBNET = "10.213.71"
CLIENT_NS = f"{PREFIX}-c"
HTTP_PORT, PEER_PORT = 8080, 7000
APP = "chaos"
SHARDS = 16
REPLICAS = 3  # the node's default replication factor
FAULT_KINDS = ["kill-leader", "kill-follower", "pause-leader", "pause-follower", "pause-edge",
               "isolate-leader", "isolate-follower", "split", "one-way", "full-restart"]


def log(*words):
    print("[chaos]", *words, flush=True)


class Cluster:
    """N nodes, each `parley node` in its own namespace, and the faults done to them."""

    def __init__(self, parley, size, work, secret, app_secret, raft_loops=(1,)):
        self.raft_loops = list(raft_loops)
        self.parley, self.size, self.work = parley, size, work
        self.secret, self.app_secret = secret, app_secret
        self.ids = list(range(1, size + 1))
        self.procs, self.expected_exit, self.paused, self.cut = {}, set(), set(), {}
        self.lab = Lab(PREFIX)

    def ns(self, i):
        return f"{PREFIX}-n{i}"

    def address(self, i):
        return f"{SUBNET}.{10 + i}"

    def url(self, i, path=""):
        return f"http://{self.address(i)}:{HTTP_PORT}{path}"

    def ws(self, i):
        return f"ws://{self.address(i)}:{HTTP_PORT}/ws"

    def make_network(self):
        self.lab.clean()
        hosts = [(self.ns(i), self.address(i), [f"node{i}"]) for i in self.ids]
        self.lab.make(hosts + [(CLIENT_NS, f"{SUBNET}.100", ["client"])])

    def running(self, i):
        return i in self.procs and self.procs[i].poll() is None

    def start(self, i):
        if self.running(i):
            return  # two overlapping faults on one node: the first restart already brought it back
        peers = ",".join(f"{j}={self.address(j)}:{PEER_PORT}" for j in self.ids)
        data = os.path.join(self.work, f"data-{i}")
        os.makedirs(data, exist_ok=True)
        # Secrets from files (SPEC A5): nothing secret on a command line.
        secret_file, app_file = os.path.join(self.work, "cluster-secret"), os.path.join(self.work, "apps")
        for path, text in ((secret_file, self.secret), (app_file, f"{APP}:{self.app_secret}\n")):
            if not os.path.exists(path):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
                os.write(fd, text.encode())
                os.close(fd)
        argv = [*netns(self.ns(i)), self.parley, "node", "--id", str(i),
                "--listen", f"{self.address(i)}:{HTTP_PORT}", "--peer-listen", f"{self.address(i)}:{PEER_PORT}",
                "--peers", peers, "--data", data, "--secret-file", secret_file, "--shards", str(SHARDS),
                "--app-file", app_file,
                # SPEC W2: the app's webhook receiver runs in the clients' namespace, on the lab's subnet.
                "--webhook-allow", f"{SUBNET}.0/24",
                # Faults stop nodes by kill -9 and the run's end stops all at once: no drain on SIGTERM here
                # (tests/ParleyNodeTests/DrainIntegrationTests covers it).
                "--drain-seconds", "0",
                # Issue 35: the nodes' Raft loops, from --raft-loops in turn (a cluster mixing one and two).
                "--raft-loops", str(self.raft_loops[(i - 1) % len(self.raft_loops)])]
        out = open(os.path.join(self.work, f"node-{i}.log"), "ab")
        self.procs[i] = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        self.expected_exit.discard(i)

    def start_all(self):
        for i in self.ids:
            self.start(i)

    def kill9(self, i):
        proc = self.procs.get(i)
        if proc is None or proc.poll() is not None:
            return
        self.expected_exit.add(i)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
        self.paused.discard(i)

    def pause(self, i, stopped):
        proc = self.procs.get(i)
        if proc is None or proc.poll() is not None:
            return
        os.killpg(proc.pid, signal.SIGSTOP if stopped else signal.SIGCONT)
        (self.paused.add if stopped else self.paused.discard)(i)

    def drop_between(self, i, others, inbound=True, outbound=True, tag="0"):
        """nft rules in node i's namespace: drop its traffic with the other nodes (not with the clients). Each
        fault has its own table (`tag`), so healing one fault never lifts another's cut that overlaps it."""
        table = f"inet {PREFIX}{tag}"
        sh(*netns(self.ns(i)), "nft", "add", "table", *table.split())
        sh(*netns(self.ns(i)), "nft", "add", "chain", *table.split(), "in",
           "{ type filter hook input priority 0; policy accept; }")
        sh(*netns(self.ns(i)), "nft", "add", "chain", *table.split(), "out",
           "{ type filter hook output priority 0; policy accept; }")
        for j in others:
            if inbound:
                sh(*netns(self.ns(i)), "nft", "add", "rule", *table.split(), "in", "ip", "saddr", self.address(j), "drop")
            if outbound:
                sh(*netns(self.ns(i)), "nft", "add", "rule", *table.split(), "out", "ip", "daddr", self.address(j), "drop")
        self.cut.setdefault((i, tag), set()).update(others)

    def heal_network(self, tag=None):
        """Deletes the tables of fault `tag` (every fault's when None)."""
        for (i, t) in list(self.cut):
            if tag is None or t == tag:
                sh(*netns(self.ns(i)), "nft", "delete", "table", "inet", f"{PREFIX}{t}", check_exit=False)
                del self.cut[(i, t)]

    def can_reach_peer_port(self, i, j):
        """Whether node i's namespace can open a TCP connection to node j's peer port (a partition must cut it)."""
        probe = subprocess.run([*netns(self.ns(i)), "timeout", "2", "bash", "-c",
                                f"exec 3<>/dev/tcp/{self.address(j)}/{PEER_PORT}"], capture_output=True)
        return probe.returncode == 0

    def status(self, i, timeout=2):
        code, body = http(self.url(i, "/status"), timeout=timeout)
        return json.loads(body) if code == 200 else None

    def statuses(self, timeout=1):
        """{node: /status} of the running, unpaused nodes that answer, asked all at once (one slow node must
        not delay the others: the recovery time is read off these)."""
        live = [i for i in self.ids
                if i not in self.paused and i in self.procs and self.procs[i].poll() is None]
        if not live:
            return {}
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(live)) as pool:
            answers = dict(zip(live, pool.map(lambda i: self.status(i, timeout=timeout), live)))
        return {i: status for i, status in answers.items() if status is not None}

    def edge_closes(self):
        """{(node, reason): n} of the WebSockets each node's edge dropped without a handshake (too slow a
        reader, too slow a frame), read off /metrics before the nodes stop."""
        out = {}
        for i in self.ids:
            if i in self.paused or i not in self.procs or self.procs[i].poll() is not None:
                continue
            code, text = http(self.url(i, "/metrics"), timeout=2)
            for line in text.splitlines() if code == 200 else []:
                if line.startswith("parley_edge_closes_total{") and not line.endswith(" 0"):
                    reason = line.split('reason="', 1)[1].split('"', 1)[0]
                    out[f"node {i} {reason}"] = int(float(line.rsplit(" ", 1)[1]))
        return out

    def leaders(self):
        """{shard: leader} for the shards whose leader a majority of the shard's replicas names (a shard has a
        leader when a quorum follows it: a replica still starting, cut off or not yet told does not hold the
        others back, and two leaders cannot both be named by a majority)."""
        seen = {}
        for status in self.statuses(timeout=0.5).values():
            for shard in status["shards"]:
                if shard["leader"]:
                    key = (shard["shard"], shard["leader"])
                    seen[key] = seen.get(key, 0) + 1
        quorum = min(REPLICAS, self.size) // 2 + 1
        return {shard: leader for (shard, leader), n in seen.items() if n >= quorum}

    def converged(self):
        """Whether every node answers and each shard's replicas have applied the same index."""
        return self.applied_view() is not None

    def applied_view(self):
        """{shard: (commit, applied)} when every node answers and each shard's replicas agree on both; else None."""
        statuses = self.statuses()
        if len(statuses) < self.size:
            return None
        applied = {}
        for status in statuses.values():
            for shard in status["shards"]:
                applied.setdefault(shard["shard"], set()).add((shard["commit"], shard["applied"]))
        if not all(len(v) == 1 for v in applied.values()):
            return None
        return {shard: next(iter(v)) for shard, v in applied.items()}

    def disagreements(self):
        """{shard: {node: (role, commit, applied)}} of the shards whose replicas disagree (what `settle` reports)."""
        by_shard = {}
        for i, status in sorted(self.statuses().items()):
            for shard in status["shards"]:
                by_shard.setdefault(shard["shard"], {})[i] = (shard["role"], shard["commit"], shard["applied"])
        return {shard: v for shard, v in by_shard.items() if len({(c, a) for _, c, a in v.values()}) > 1}

    def settle(self, seconds):
        """Cuts every node off from the others once each shard's replicas have applied the same index, and
        leaves the cut in place for the stop; returns how many tries it took (None: never within `seconds`).
        Commands commit at any time (lease carries, exits after their grace), so replicas seen equal and then
        stopped one by one could still stop at different indexes: with every peer link cut nothing commits,
        so equal stays equal through the stop. Equal twice, half a second apart: a message that arrived just
        before the cut has been handled. Unequal under the cut (a commit index not yet passed on): lift it,
        let the replicas catch up, and try again."""
        deadline = time.time() + seconds
        tries = 0
        while time.time() < deadline:
            tries += 1
            for i in self.ids:
                self.drop_between(i, [j for j in self.ids if j != i], tag="settle")
            time.sleep(0.5)
            first = self.applied_view()
            time.sleep(0.5)
            if first is not None and self.applied_view() == first:
                return tries
            if tries == 3:
                silent = sorted(set(self.ids) - set(self.statuses()))
                log(f"  not yet the same under the cut: {self.disagreements()}; no /status from {silent}")
            self.heal_network("settle")
            end = time.time() + 3
            while time.time() < end and not self.converged():
                time.sleep(0.2)
        return None

    def leader_of(self, shard):
        for i in self.ids:
            try:
                status = self.status(i, timeout=1)
            except OSError:
                continue
            for s in (status or {}).get("shards", []):
                if s["shard"] == shard and s["leader"]:
                    return s["leader"]
        return None

    def stop_all(self):
        for i in list(self.paused):
            self.pause(i, False)
        for i, proc in self.procs.items():
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
        killed = []
        for i, proc in self.procs.items():
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
                killed.append(i)
        return killed

    def crashes(self):
        """Nodes that ended on their own, and fatal lines in any node's log."""
        found = []
        for i, proc in self.procs.items():
            code = proc.poll()
            if code not in (None, 0) and i not in self.expected_exit and code != -signal.SIGTERM:
                found.append(f"node {i} exited {code}")
        for i in self.ids:
            path = os.path.join(self.work, f"node-{i}.log")
            for line in open(path, errors="replace") if os.path.exists(path) else []:
                if "Fatal error" in line or "fatalError" in line or "Assertion failed" in line:
                    found.append(f"node {i}: {line.strip()[:300]}")
        return found

    def history(self, i, room):
        out = subprocess.run([self.parley, "storage", "history", "--data", os.path.join(self.work, f"data-{i}"),
                              "--room", f"{APP}\x1f{room}"], capture_output=True, text=True, timeout=60)
        if out.returncode != 0:
            raise Failure(f"storage history on node {i}: {out.stderr.strip()[:400]}")
        return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


class Schedule:
    """The faults of one schedule, drawn from its seed: 1-3 faults, each at a time inside the load window,
    some overlapping."""

    def __init__(self, seed, size, load_seconds):
        rng = random.Random(seed)
        self.seed, self.faults = seed, []
        count = rng.choice([1, 1, 2, 2, 3])
        for _ in range(count):
            kind = rng.choice(FAULT_KINDS)
            start = round(rng.uniform(2, load_seconds * 0.45), 1)
            length = round(rng.uniform(1, min(20, load_seconds * 0.45)), 1)
            self.faults.append({"kind": kind, "at": start, "for": length, "pick": rng.random()})
        self.faults.sort(key=lambda f: f["at"])

    def describe(self):
        return ", ".join(f"{f['kind']} at {f['at']}s for {f['for']}s" for f in self.faults)


async def apply_faults(cluster, schedule, rooms_shards, t0, touched):
    """Runs the schedule's faults against the live cluster; `touched` collects every node a fault hit."""
    async def one(fault):
        await asyncio.sleep(max(0, t0 + fault["at"] - time.time()))
        kind, pick = fault["kind"], fault["pick"]
        shard = rooms_shards[int(pick * len(rooms_shards)) % len(rooms_shards)]
        leader = await asyncio.to_thread(cluster.leader_of, shard) or cluster.ids[0]
        followers = [i for i in cluster.ids if i != leader]
        target = leader if kind.endswith("leader") else followers[int(pick * len(followers)) % len(followers)]
        if kind == "pause-edge":
            target = cluster.ids[int(pick * cluster.size) % cluster.size]
        log(f"  fault {kind} on node {target} (shard {shard} led by {leader}) for {fault['for']}s")
        if kind.startswith("kill"):
            touched.add(target)
            if not cluster.running(target):
                return  # another fault has it down; that fault restarts it
            cluster.kill9(target)
            await asyncio.sleep(fault["for"])
            cluster.start(target)
        elif kind.startswith("pause"):
            touched.add(target)
            cluster.pause(target, True)
            await asyncio.sleep(fault["for"])
            cluster.pause(target, False)
        elif kind.startswith("isolate") or kind == "one-way":
            touched.add(target)
            others = [i for i in cluster.ids if i != target]
            tag = str(id(fault))
            cluster.drop_between(target, others, inbound=(kind != "one-way"), tag=tag)
            # The partition must really cut the peer traffic, or the schedule proves nothing.
            if kind != "one-way":
                reach = await asyncio.to_thread(cluster.can_reach_peer_port, target, others[0])
                if reach:
                    raise Failure(f"the partition of node {target} did not cut its peer traffic")
            await asyncio.sleep(fault["for"])
            cluster.heal_network(tag)
        elif kind == "split":
            minority = cluster.ids[: cluster.size // 2] if pick < 0.5 else cluster.ids[-(cluster.size // 2):]
            majority = [i for i in cluster.ids if i not in minority]
            touched.update(minority)
            tag = str(id(fault))
            for i in minority:
                cluster.drop_between(i, majority, tag=tag)
            if await asyncio.to_thread(cluster.can_reach_peer_port, minority[0], majority[0]):
                raise Failure("the split did not cut the peer traffic")
            await asyncio.sleep(fault["for"])
            cluster.heal_network(tag)
        elif kind == "full-restart":
            touched.update(cluster.ids)
            for i in cluster.ids:
                cluster.kill9(i)
            await asyncio.sleep(min(fault["for"], 3))
            cluster.start_all()
    await asyncio.gather(*(one(f) for f in schedule.faults))


def check_schedule(cluster, workload, rooms, touched):
    """The checker: returns (problems, figures)."""
    problems = []
    figures = {"acked": 0, "lost": 0, "duplicated": 0, "reordered": 0, "errored_present": 0,
               "replica_mismatch": 0, "sessions_lost_silently": 0, "holes": 0}
    for room in rooms:
        histories = {}
        for i in cluster.ids:
            items = cluster.history(i, room)
            if items:
                histories[i] = items
        if len(histories) < min(3, cluster.size):
            problems.append(f"room {room}: history on only {sorted(histories)} (expected every replica)")
        base = next(iter(histories.values()), [])
        for i, items in histories.items():
            if items != base:
                figures["replica_mismatch"] += 1
                diff = next((a, b) for a, b in zip(base + [None] * len(items), items + [None] * len(base)) if a != b)
                shorter, longer = sorted((base, items), key=len)
                shape = ("a prefix of the other's" if longer[:len(shorter)] == shorter else "apart from the other's")
                problems.append(f"room {room}: node {i}'s history ({len(items)} items) differs from node "
                                f"{next(iter(histories))}'s ({len(base)}) at {diff}; the shorter one is {shape}")
        seqs = [item["seq"] for item in base]
        if seqs != sorted(set(seqs)):
            figures["reordered"] += 1
            problems.append(f"room {room}: history seqs not strictly increasing")
        by_id = {}
        for item in base:
            if item.get("kind") == "message":
                by_id.setdefault(item["clientMessageId"], []).append(item["seq"])
        for cmid, places in by_id.items():
            if len(places) > 1:
                figures["duplicated"] += 1
                problems.append(f"room {room}: {cmid} stored {len(places)} times at {places}")
        for cmid, seq in workload.acked(room).items():
            figures["acked"] += 1
            if cmid not in by_id:
                figures["lost"] += 1
                problems.append(f"room {room}: acknowledged {cmid} (seq {seq}) is not in history")
            elif by_id[cmid][0] != seq:
                problems.append(f"room {room}: {cmid} acknowledged at seq {seq}, stored at {by_id[cmid][0]}")
        for cmid, code in workload.refused(room).items():
            if cmid in by_id:
                figures["errored_present"] += 1
                problems.append(f"room {room}: {cmid} was refused ({code}) yet stored")
    for client in workload.clients:
        for problem in client.stream_problems():
            figures["holes"] += 1
            problems.append(f"{client.name}: {problem}")
        for when in client.silent_losses:
            figures["sessions_lost_silently"] += 1
            problems.append(f"{client.name}: session ended without `status: lost` ({when})")
        if client.edge not in touched and client.closed_by_healthy_edge:
            figures["sessions_lost_silently"] += 1
            problems.append(f"{client.name}: its edge (node {client.edge}) was never faulted, yet closed the "
                            f"connection {client.closed_by_healthy_edge} time(s); journal: {client.journal[-6:]}")
    problems += [f"crash: {c}" for c in cluster.crashes()]
    return problems, figures


RECEIVER_PORT = 9099


def start_receiver(cluster):
    """The app server's webhook receiver, in this (the clients') namespace."""
    out = open(os.path.join(cluster.work, "receiver.log"), "ab")
    return subprocess.Popen([sys.executable, os.path.join(ROOT, "cluster/webhooks/receiver.py"), "--host", f"{SUBNET}.100",
                             "--port", str(RECEIVER_PORT), "--app-key", APP, "--app-secret", cluster.app_secret],
                            stdout=out, stderr=subprocess.STDOUT, start_new_session=True)


def receiver_events():
    code, body = http(f"http://{SUBNET}.100:{RECEIVER_PORT}/events", timeout=5)
    return json.loads(body) if code == 200 else None


async def subscribe_webhooks(cluster, rooms):
    """SPEC W2: the app asks for room messages, and a probe message in every room shows each room's shard keeps
    them before the load starts (a shard keeps what the app asks for from the moment its leader learns of it)."""
    status, answer = await asyncio.to_thread(signed, cluster.url(1), APP, cluster.app_secret, "/v1/app/setWebhooks",
                                             {"url": f"http://{SUBNET}.100:{RECEIVER_PORT}/parley", "events": ["room.message"]})
    if status != 200:
        raise Failure(f"setWebhooks: {status} {answer}")
    deadline = time.time() + 30
    for room in rooms:
        for n in range(1000):
            if time.time() > deadline:
                raise Failure(f"the webhook receiver never heard of room {room}")
            probe = f"webhook-probe-{room}-{n}"
            await asyncio.to_thread(signed, cluster.url(1), APP, cluster.app_secret, "/v1/message/send",
                                    {"roomId": room, "fromAccid": "u0n1", "type": "text", "body": probe, "msgId": probe})
            await asyncio.sleep(0.3)
            events = await asyncio.to_thread(receiver_events) or []
            if any((e.get("message") or {}).get("body") == probe for e in events):
                break


async def check_webhooks(workload, rooms):
    """Every acknowledged message reached the receiver, each room's in seq order (first deliveries); waits for
    the back-off (at most 30 s) after the heal."""
    figures = {"webhook_missing": 0, "webhook_reordered": 0, "webhook_delivered": 0}
    problems = []
    deadline = time.time() + 60
    while True:
        events = await asyncio.to_thread(receiver_events) or []
        got = {}
        for e in events:
            if e.get("event") == "room.message":
                got.setdefault(e.get("roomId"), []).append(e)
        missing = {room: [c for c in workload.acked(room) if c not in
                          {(e.get("message") or {}).get("clientMessageId") for e in got.get(room, [])}] for room in rooms}
        if not any(missing.values()) or time.time() > deadline:
            break
        await asyncio.sleep(1)
    for room in rooms:
        seqs = [e.get("seq") for e in got.get(room, [])]
        figures["webhook_delivered"] += len(seqs)
        if seqs != sorted(seqs):
            figures["webhook_reordered"] += 1
            problems.append(f"room {room}: the webhook receiver got messages out of seq order")
        if missing[room]:
            figures["webhook_missing"] += len(missing[room])
            problems.append(f"room {room}: {len(missing[room])} acknowledged messages never reached the webhook "
                            f"receiver, e.g. {missing[room][:3]}")
    return problems, figures


async def run_schedule(cluster, schedule, load_seconds, recovery_bound):
    """One schedule against a cluster that is up; returns (problems, figures, recovery seconds)."""
    rooms = [f"room-{k}" for k in range(3)]
    workload = Workload(cluster, APP, rooms)
    await workload.prepare()
    await subscribe_webhooks(cluster, rooms)
    im = ImWorkload(cluster, APP)
    await im.prepare()
    rooms_shards = []
    for room in rooms:
        code, body = await asyncio.to_thread(http, cluster.url(1, f"/placement/rooms/{room}?app={APP}"))
        rooms_shards.append(json.loads(body)["shard"] if code == 200 else 0)
    touched = set()
    t0 = time.time()
    load = asyncio.create_task(workload.run(load_seconds))
    im_load = asyncio.create_task(im.run(load_seconds))
    try:
        await apply_faults(cluster, schedule, rooms_shards, t0, touched)
    finally:
        # Heal whatever is still broken (a fault still running when the schedule ends is cut short here).
        cluster.heal_network()
        for i in list(cluster.paused):
            cluster.pause(i, False)
        for i in cluster.ids:
            cluster.start(i)
    healed = time.time()
    recovery = None
    missing_since_1s = set()
    while time.time() - healed < 60:
        leaders = await asyncio.to_thread(cluster.leaders)
        if all(shard in leaders for shard in range(SHARDS)):
            recovery = time.time() - healed
            break
        if time.time() - healed > 1:
            missing_since_1s.update(shard for shard in range(SHARDS) if shard not in leaders)
        await asyncio.sleep(0.1)
    if missing_since_1s:
        views = await asyncio.to_thread(cluster.statuses)
        log(f"  shards without a majority-named leader 1 s after the heal: {sorted(missing_since_1s)}; now: "
            + "; ".join(f"node {i}: " + ",".join(f"{s['shard']}:{s['role'][0]}{s['leader']}/t{s['term']}"
                                               for s in v["shards"] if s["shard"] in missing_since_1s)
                        for i, v in sorted(views.items())))
    await load
    await im_load
    await workload.drain(seconds=30)
    await workload.close()
    # The last exits (302) commit as the clients close: let every replica apply them before the nodes stop,
    # so the histories compared are of the same log.
    deadline = time.time() + 20
    while time.time() < deadline and not await asyncio.to_thread(cluster.converged):
        await asyncio.sleep(0.25)
    problems, im_figures = await im.check()
    webhook_problems, webhook_figures = await check_webhooks(workload, rooms)
    problems += webhook_problems
    workload.im_figures = {**im_figures, **webhook_figures}
    if recovery is None:
        problems.append("some shard had no leader 60 s after the heal")
    elif recovery > recovery_bound:
        problems.append(f"every shard had a leader only {recovery:.1f} s after the heal (bound {recovery_bound} s)")
    return workload, rooms, touched, problems, recovery


def one_schedule(args, seed):
    """Fresh cluster, the schedule, the checks. Returns a result dict."""
    schedule = Schedule(seed, args.nodes, args.load_seconds)
    log(f"schedule seed {seed} ({args.nodes} nodes): {schedule.describe()}")
    work = tempfile.mkdtemp(prefix="parley-chaos-")
    cluster = Cluster(args.parley, args.nodes, work, secrets.token_hex(16), secrets.token_hex(16),
                      raft_loops=[int(x) for x in args.raft_loops.split(",")])
    result = {"seed": seed, "nodes": args.nodes, "faults": [f["kind"] for f in schedule.faults]}
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        cluster.make_network()
        cluster.start_all()
        enter_namespace(CLIENT_NS)
        receiver = start_receiver(cluster)
        try:
            def ready():
                answers = [http(cluster.url(i, "/readyz"), timeout=1)[0] for i in cluster.ids]
                return True if all(a == 200 for a in answers) else answers
            wait_for("every node to be ready", 90, lambda: _guard(ready))
            workload, rooms, touched, problems, recovery = asyncio.run(
                run_schedule(cluster, schedule, args.load_seconds, args.recovery_bound))
            edge_closes = cluster.edge_closes()
            tries = cluster.settle(30)  # from the clients' namespace, as every /status read
            if tries is None:
                problems.append("the replicas never held still at the same applied index with the peer links cut (30 s)")
            elif tries > 1:
                log(f"  the replicas held still at the same index on try {tries}")
        finally:
            os.killpg(receiver.pid, signal.SIGKILL)
            receiver.wait()
            leave_namespace(home)
        stop_started = time.time()
        killed = cluster.stop_all()
        if killed:
            problems.append(f"nodes {killed} did not stop within 20 s of SIGTERM and were killed: their stores "
                            "may lack the history rows they applied last")
        if time.time() - stop_started > 5:
            log(f"  the nodes took {time.time() - stop_started:.1f} s to stop")
        checked, figures = check_schedule(cluster, workload, rooms, touched)
        problems += checked
        if edge_closes and any("closed the connection" in p for p in problems):
            problems.append(f"edges' own drops (parley_edge_closes_total): {edge_closes}")
        result.update(figures, **workload.im_figures, recovery=recovery, problems=problems, edge_closes=edge_closes,
                      reconnects=sum(c.reconnects for c in workload.clients),
                      told_lost=sum(c.told_lost for c in workload.clients))
    except Failure as failure:
        result["problems"] = [f"harness: {failure}"]
    finally:
        cluster.stop_all()
        os.close(home)
        cluster.lab.clean()
        if result.get("problems"):
            result["logs"] = work
        else:
            shutil.rmtree(work, ignore_errors=True)
    return result


def _guard(probe):
    try:
        return probe()
    except OSError as error:
        return str(error)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parley", default=os.path.join(ROOT, ".build/debug/parley"))
    parser.add_argument("--nodes", type=int, default=3)
    parser.add_argument("--schedules", type=int, default=10)
    parser.add_argument("--seed", type=int, default=int(time.time()) % 100000,
                        help="schedule i runs with seed SEED*1000+i")
    parser.add_argument("--first", type=int, default=0,
                        help="start at schedule FIRST (to finish a long run that was cut short)")
    parser.add_argument("--replay", type=int, help="run only the schedule with this seed")
    parser.add_argument("--load-seconds", type=float, default=24)
    parser.add_argument("--recovery-bound", type=float, default=10.0,
                        help="seconds after the heal by which every shard must have a leader")
    parser.add_argument("--budget-minutes", type=float, default=10)
    parser.add_argument("--report", help="write the figures as JSON here")
    parser.add_argument("--raft-loops", default="1,2",
                        help="each node's Raft loops in turn (node i: the ((i - 1) mod n)-th); default mixes 1 and 2")
    args = parser.parse_args()
    if os.geteuid() != 0:
        sys.exit("chaos needs root (network namespaces, nft)")
    if not shutil.which("nft"):
        sys.exit("chaos needs nft (apt-get install nftables)")
    args.parley = os.path.abspath(args.parley)
    seeds = [args.replay] if args.replay is not None else [args.seed * 1000 + i for i in range(args.first, args.schedules)]
    deadline = time.time() + args.budget_minutes * 60
    results = []
    for seed in seeds:
        if time.time() > deadline - 90:
            log(f"budget of {args.budget_minutes} min spent: {len(results)} of {len(seeds)} schedules ran")
            break
        result = one_schedule(args, seed)
        results.append(result)
        if result.get("problems"):
            log(f"FAILED schedule seed {seed}:")
            for problem in result["problems"][:30]:
                log("   ", problem)
            log(f"   node logs kept in {result.get('logs')}")
            log(f"   replay: sudo python3 cluster/chaos/run.py --parley {args.parley} --nodes {args.nodes} "
                f"--load-seconds {args.load_seconds} --raft-loops {args.raft_loops} --replay {seed}")
        else:
            log(f"  ok: {result['acked']} acknowledged, recovery {result['recovery']:.2f} s, "
                f"{result['reconnects']} reconnects, {result['told_lost']} told lost, "
                f"{result.get('webhook_delivered', 0)} messages at the webhook receiver")
    summary = summarize(results)
    # Again at the end, where a log cut to its head and tail (CI's) still shows why a schedule failed.
    for result in results:
        if result.get("problems"):
            log(f"failed schedule seed {result['seed']} ({', '.join(result['faults'])}): "
                + " | ".join(p[:300] for p in result["problems"][:6]))
    log("summary: " + json.dumps(summary, sort_keys=True))
    if args.report:
        with open(args.report, "w") as f:
            json.dump({"summary": summary, "schedules": results}, f, indent=1, sort_keys=True)
    sys.exit(1 if summary["failed"] or not results else 0)


def summarize(results):
    recoveries = sorted(r["recovery"] for r in results if r.get("recovery") is not None)

    def pct(p):
        return round(recoveries[min(len(recoveries) - 1, int(p * len(recoveries)))], 2) if recoveries else None
    kinds = {}
    for r in results:
        for kind in r["faults"]:
            kinds[kind] = kinds.get(kind, 0) + 1
    total = {k: sum(r.get(k, 0) for r in results)
             for k in ("acked", "lost", "duplicated", "reordered", "sessions_lost_silently", "replica_mismatch",
                       "errored_present", "holes", "reconnects", "told_lost", "im_acked", "im_lost", "im_duplicated",
                       "im_copies_missing", "webhook_delivered", "webhook_missing", "webhook_reordered")}
    return {"schedules": len(results), "failed": sum(1 for r in results if r.get("problems")),
            "faults": kinds, **total, "recovery_p50": pct(0.5), "recovery_p99": pct(0.99),
            "failed_seeds": [r["seed"] for r in results if r.get("problems")]}


if __name__ == "__main__":
    main()
