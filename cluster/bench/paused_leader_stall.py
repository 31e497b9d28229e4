#!/usr/bin/env python3
"""How long a client on a healthy follower's node waits when its room's shard leader is paused (SIGSTOP:
connections open and silent) — session 47's figure for docs/cluster.md, "A silent leader".

    cluster/bench/paused_leader_stall.py --parley PARLEY [--op write|read] [--seconds 5] [--edge follower|none]

Starts 3 `parley node` processes on loopback (16 shards, fsync on), makes a user and rooms, enters a room whose
shard is led by node 2 or 3 from node 1, sends a few messages, pauses the leader and then sends (or reads the
room's info) one request after another for --seconds, printing when each began after the pause and how long it
took. `--edge none` (session 48): 4 nodes, and a room none of whose shard's 3 replicas is on node 1, the client's.
Bounded: the leader is resumed and every node killed at the end.
"""
import json
import urllib.request
import argparse
import asyncio
import os
import secrets
import signal
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
sys.path.insert(0, os.path.join(ROOT, "cluster", "bench"))
from client_vs_jetstream import room_leader  # noqa: E402
from protocol_session import ProtocolSession, kill_groups, start_nodes, wait_ready  # noqa: E402
from signed_api import signed  # noqa: E402


async def probe(port, room, app, leader_pid, op, seconds):
    s = await ProtocolSession.open(port)
    auth = {"mode": "independent", "appKey": app, "account": "w", "token": "w-token"}
    entered = await s.call("enter", roomId=room, nickname="w", auth=auth)
    assert entered.get("ok"), entered
    for k in range(5):
        await s.call("sendMessage", roomId=room, type="text", body="x", clientMessageId=f"a{k}")
    os.kill(leader_pid, signal.SIGSTOP)
    paused = time.time()
    k = 0
    while time.time() - paused < seconds:
        k += 1
        began = time.time()
        if op == "read":
            answer = await s.call("fetchRoomInfo", roomId=room)
        else:
            answer = await s.call("sendMessage", roomId=room, type="text", body="x", clientMessageId=f"b{k}")
        why = "" if answer.get("ok") else f" ({(answer.get('error') or {}).get('code')})"
        print(f"{began - paused:6.2f} s after the pause: took {time.time() - began:5.2f} s, ok={answer.get('ok')}{why}", flush=True)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parley", required=True)
    parser.add_argument("--op", choices=["write", "read"], default="write")
    parser.add_argument("--seconds", type=float, default=5)
    parser.add_argument("--edge", choices=["follower", "none"], default="follower",
                        help="the client's node holds a follower of the room's shard, or no replica of it")
    args = parser.parse_args()
    work = tempfile.mkdtemp()
    app, secret = "stall", secrets.token_hex(16)
    procs, http, _, _ = start_nodes(args.parley, work, app, secret, count=3 if args.edge == "follower" else 4, shards=16)
    try:
        wait_ready(http)
        base = f"http://127.0.0.1:{http[0]}"
        signed(base, app, secret, "/v1/user/create", {"accid": "w", "token": "w-token"})
        for i in range(12):
            signed(base, app, secret, "/v1/room/create", {"roomId": f"r{i}", "creator": "w", "name": "stall"})
        time.sleep(3)  # the edges learn the app's user from meta
        def fits(room):
            if args.edge == "follower":
                return True
            placement = json.load(urllib.request.urlopen(f"http://127.0.0.1:{http[0]}/placement/rooms/{room}?app={app}", timeout=5))
            return 1 not in placement.get("replicas", [1])
        room, leader = next((f"r{i}", n) for i in range(12)
                            if fits(f"r{i}") and (n := room_leader(http[0], f"r{i}", app)) != 1)
        print(f"room {room}, its shard led by node {leader}; the client on node 1 ({args.edge} there)", flush=True)
        asyncio.run(probe(http[0], room, app, procs[leader - 1].pid, args.op, args.seconds))
    finally:
        for p in procs:
            try:
                os.kill(p.pid, signal.SIGCONT)
            except OSError:
                pass
        kill_groups(procs)


if __name__ == "__main__":
    main()
