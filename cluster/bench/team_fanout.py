#!/usr/bin/env python3
"""Issue 38 item 3: what a team message costs the nodes, an advanced team against a supergroup.

    cluster/bench/team_fanout.py --parley PARLEY [--teams advanced:500,superTeam:500,superTeam:5000]
        [--online 300] [--messages 400] [--rate 40] [--runs 1]

Starts 3 founding nodes on loopback (fsync on, 16 shards, default settings) and, for each team asked for
(type:members, the owner counted), makes its members through the server API (`/v1/user/create`, `/v1/team/create`, then
`/v1/team/add` 200 at a time, joined at once), logs `--online` of them in as IM devices over WebSockets
(spread over the 3 nodes), waits 5 s, and has the owner send `--messages` team messages through the server
API (`/v1/team/sendMsg`) at `--rate` per second. Each device counts the messages it is pushed (`team` events)
and their delay from the send. Reported per team: the nodes' CPU (user + system, /proc, all three) per
message and per 1,000 deliveries over the sending (and a 3 s tail), the RSS of every node before the team was
made and after the messages, the bytes that crossed loopback per message over the sending (the feeds' pages to
each edge and the pushes to the devices, the same for both types), pushes delivered against expected,
p50/p99 delay. Bounded: each team's sending takes messages/rate seconds, the
nodes are killed at the end. Every team runs on a fresh cluster.
"""
import argparse
import asyncio
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
sys.path.insert(0, os.path.join(ROOT, "cluster", "bench"))
from client_vs_jetstream import cpu_seconds  # noqa: E402
from protocol_session import kill_groups, rss_kib, start_nodes, wait_ready  # noqa: E402
from signed_api import lift_budgets, signed  # noqa: E402


def loopback_bytes():
    """Bytes received on loopback so far (every node-to-node and client byte of this benchmark)."""
    with open("/proc/net/dev") as f:
        for line in f:
            name, _, rest = line.partition(":")
            if name.strip() == "lo":
                return int(rest.split()[0])
    return 0


def must(answer, what):
    code, body = answer
    if code != 200:
        raise RuntimeError(f"{what}: {code} {body}")
    return body


def make_team(base, key, secret, kind, members):
    """Team "t" of type `kind` with `members` members: its owner "owner" and "u0" …."""
    accounts = [f"u{i}" for i in range(members - 1)]
    with ThreadPoolExecutor(16) as pool:
        for account, answer in zip(["owner"] + accounts, pool.map(
                lambda a: signed(base, key, secret, "/v1/user/create", {"accid": a, "token": f"{a}-token"}), ["owner"] + accounts)):
            must(answer, f"user/create {account}")
    time.sleep(2)  # the edges learn the app's users from meta, a moment behind the API
    must(signed(base, key, secret, "/v1/team/create",
                {"tid": "t", "owner": "owner", "tname": "Bench", "type": kind, "beinvitemode": 1}), "team/create")
    for start in range(0, len(accounts), 200):
        must(signed(base, key, secret, "/v1/team/add",
                    {"tid": "t", "owner": "owner", "members": accounts[start:start + 200]}), f"team/add {start}")
    return accounts


class Device:
    def __init__(self):
        self.delays, self.ws = [], None

    async def run(self, port, key, account, ready, stop):
        import websockets
        self.ws = await websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=16 << 20)
        await self.ws.send(json.dumps({"id": 1, "op": "hello", "versions": [1]}))
        await self.ws.send(json.dumps({"id": 2, "op": "imLogin",
                                       "auth": {"mode": "im", "appKey": key, "account": account, "token": f"{account}-token"}}))
        logged = False
        while not stop.is_set():
            try:
                frame = json.loads(await asyncio.wait_for(self.ws.recv(), 0.5))
            except asyncio.TimeoutError:
                continue
            except Exception:
                return
            if frame.get("id") == 2:
                if not frame.get("ok"):
                    raise RuntimeError(f"imLogin {account}: {frame}")
                logged = True
                ready.append(account)
            elif logged and frame.get("event") == "team" and frame.get("item", {}).get("kind") == "message":
                body = frame["item"].get("body", "")
                if body.startswith("t="):
                    self.delays.append(time.time() - float(body[2:].split(" ")[0]))
        await self.ws.close()


async def measure(base, ports, key, secret, online, messages, rate, pids):
    devices, ready, stop = [], [], asyncio.Event()
    tasks = []
    for i, account in enumerate(online):
        d = Device()
        devices.append(d)
        tasks.append(asyncio.create_task(d.run(ports[i % len(ports)], key, account, ready, stop)))
    deadline = time.time() + 120
    while len(ready) < len(online) and time.time() < deadline:
        await asyncio.sleep(0.2)
    if len(ready) < len(online):
        raise RuntimeError(f"only {len(ready)} of {len(online)} devices logged in")
    await asyncio.sleep(5)  # the edges confirm each device's memberships with the team's shard
    loop = asyncio.get_running_loop()
    before, wire = cpu_seconds(pids), loopback_bytes()
    began = time.time()
    pad = "x" * 80
    with ThreadPoolExecutor(4) as pool:
        for n in range(messages):
            due = began + n / rate
            await asyncio.sleep(max(0, due - time.time()))
            body = f"t={time.time():.6f} {pad}"
            await loop.run_in_executor(pool, lambda b=body, n=n: must(signed(
                base, key, secret, "/v1/team/sendMsg", {"tid": "t", "from": "owner", "body": b, "msgId": f"m{n}"}), "sendMsg"))
    await asyncio.sleep(3)
    cpu, wire = cpu_seconds(pids) - before, loopback_bytes() - wire
    stop.set()
    await asyncio.gather(*tasks, return_exceptions=True)
    delays = sorted(d for dev in devices for d in dev.delays)
    return cpu, delays, wire


def one(args, kind, members):
    work = tempfile.mkdtemp(prefix="parley-team-")
    procs = []
    try:
        key, secret = "bench", secrets.token_hex(16)
        procs, ports, _, _ = start_nodes(args.parley, work, key, secret, shards=16)
        wait_ready(ports)
        base = f"http://127.0.0.1:{ports[0]}"
        lift_budgets(base, key, secret)
        pids = [p.pid for p in procs]
        rss_before = [round(rss_kib(p) / 1024) for p in pids]
        accounts = make_team(base, key, secret, kind, members)
        online = accounts[:args.online]
        cpu, delays, wire = asyncio.run(measure(base, ports, key, secret, online, args.messages, args.rate, pids))
        rss_after = [round(rss_kib(p) / 1024) for p in pids]
        expected = len(online) * args.messages
        q = (lambda p: round(delays[min(len(delays) - 1, int(p * len(delays)))] * 1000, 1)) if delays else (lambda p: None)
        return {"type": kind, "members": members, "online": len(online), "messages": args.messages,
                "cpuMsPerMessage": round(cpu * 1000 / args.messages, 2),
                "cpuMsPer1000Deliveries": round(cpu * 1000 / max(1, len(delays)) * 1000, 1),
                "loopbackKBPerMessage": round(wire / args.messages / 1024, 1), "delivered": len(delays), "expected": expected, "p50ms": q(0.5), "p99ms": q(0.99),
                "rssBeforeMB": rss_before, "rssAfterMB": rss_after}
    finally:
        kill_groups(procs)
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parley", required=True)
    parser.add_argument("--teams", default="advanced:500,superTeam:500,superTeam:5000")
    parser.add_argument("--online", type=int, default=300)
    parser.add_argument("--messages", type=int, default=400)
    parser.add_argument("--rate", type=float, default=40)
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    results = []
    for run in range(args.runs):
        for spec in args.teams.split(","):
            kind, members = spec.split(":")
            r = one(args, kind, int(members))
            r["run"] = run + 1
            print(json.dumps(r), flush=True)
            results.append(r)
    print("\n| team | members | online | CPU ms / message | CPU ms / 1,000 deliveries | delivered | p50 ms | p99 ms | loopback KB / message | RSS after (MB) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for spec in args.teams.split(","):
        kind, members = spec.split(":")
        mine = [r for r in results if r["type"] == kind and r["members"] == int(members)]
        med = lambda k: round(statistics.median(r[k] for r in mine), 1)
        print(f"| {kind} | {members} | {mine[0]['online']} | {med('cpuMsPerMessage')} | {med('cpuMsPer1000Deliveries')} | "
              f"{sum(r['delivered'] for r in mine)}/{sum(r['expected'] for r in mine)} | {med('p50ms')} | {med('p99ms')} | "
              f"{med('loopbackKBPerMessage')} | {mine[-1]['rssAfterMB']} |")


if __name__ == "__main__":
    main()
