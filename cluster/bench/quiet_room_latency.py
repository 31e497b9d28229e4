#!/usr/bin/env python3
"""Issue 35: how long a message in an otherwise quiet room takes to reach a member on each node — the cost of
deferred commit notices (`--commit-notice-ms`): a follower's node delivers a message once its replica learns the
commit index, with the group's next append or heartbeat or by the notice that waited for one.

    cluster/bench/quiet_room_latency.py --parley PARLEY [--messages 40] [--gap-ms 250] [--node-option=--commit-notice-ms=0]

Starts 3 `parley node` processes on loopback (64 shards), one room, a sender on node 1 and a receiver on every
node; the sender sends one message at a time, awaits its answer, and the time from the send to each receiver's
`message` event is recorded; messages are --gap-ms apart, so the room's group is quiet in between. Prints, per
receiver, the median and 90th percentile and whether its node led the room's shard. Bounded: --messages sends
(5 s wait each at most); the nodes are killed at the end.
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
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
from protocol_session import ProtocolSession, kill_groups, start_nodes, wait_ready  # noqa: E402
from signed_api import lift_budgets, signed  # noqa: E402

APP = "bench"
ROOM = "quiet"


async def enter(port, account):
    session = await ProtocolSession.open(port)
    answer = await session.call("enter", roomId=ROOM, nickname=account,
                                auth={"mode": "independent", "appKey": APP, "account": account, "token": account + "-token"})
    if not answer.get("ok"):
        raise RuntimeError(f"enter on port {port}: {answer}")
    return session


async def received(session, body):
    """The time the receiver's `message` event with `body` arrives."""
    while True:
        frame = json.loads(await asyncio.wait_for(session.ws.recv(), 5))
        if frame.get("event") == "message" and body in json.dumps(frame):
            return time.perf_counter()


async def measure(http_ports, messages, gap_ms):
    sender = await enter(http_ports[0], "sender")
    receivers = [await enter(port, f"receiver{i}") for i, port in enumerate(http_ports)]
    await asyncio.sleep(1)
    latencies = [[] for _ in receivers]
    for n in range(messages):
        body = f"quiet-{n}-{secrets.token_hex(4)}"
        waits = [asyncio.ensure_future(received(r, body)) for r in receivers]
        start = time.perf_counter()
        answer = await sender.call("sendMessage", roomId=ROOM, type="text", body=body, clientMessageId=f"q{n}")
        if not answer.get("ok"):
            raise RuntimeError(f"sendMessage: {answer}")
        for i, arrived in enumerate(await asyncio.gather(*waits)):
            latencies[i].append((arrived - start) * 1000)
        await asyncio.sleep(gap_ms / 1000)
    return latencies


def room_shard_leader(http_port):
    """The leader of the one shard holding a room, as node 1's /status sees it."""
    status = json.load(urllib.request.urlopen(f"http://127.0.0.1:{http_port}/status", timeout=10))
    for shard in status.get("shards", []):
        if shard.get("rooms", 0) > 0:
            return shard.get("leader")
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parley", required=True)
    parser.add_argument("--messages", type=int, default=40)
    parser.add_argument("--gap-ms", type=int, default=250)
    parser.add_argument("--node-option", action="append", default=[], help="an option for every node")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="parley-quiet-room-")
    procs = []
    try:
        secret = secrets.token_hex(16)
        procs, http_ports, _, _ = start_nodes(args.parley, work, APP, secret, shards=64, extra=tuple(args.node_option))
        wait_ready(http_ports)
        base = f"http://127.0.0.1:{http_ports[0]}"
        lift_budgets(base, APP, secret)
        for account in ["sender"] + [f"receiver{i}" for i in range(len(http_ports))]:
            signed(base, APP, secret, "/v1/user/create", {"accid": account, "token": account + "-token"})
        code, answer = signed(base, APP, secret, "/v1/room/create", {"roomId": ROOM, "creator": "sender", "name": "Quiet"})
        if code != 200:
            raise RuntimeError(f"room/create: {code} {answer}")
        time.sleep(3)  # the edges learn the app's users from meta, a moment behind the API
        latencies = asyncio.run(measure(http_ports, args.messages, args.gap_ms))
        leader = room_shard_leader(http_ports[0])
    finally:
        kill_groups(procs)
        shutil.rmtree(work, ignore_errors=True)
    for i, values in enumerate(latencies):
        values.sort()
        role = "leads the room's shard" if leader == i + 1 else "a follower"
        print(f"receiver on node {i + 1} ({role}): median {statistics.median(values):.2f} ms, "
              f"p90 {values[int(len(values) * 0.9)]:.2f} ms")


if __name__ == "__main__":
    main()
