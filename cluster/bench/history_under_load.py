#!/usr/bin/env python3
"""History reads while writers flood the same room (issue 34: reads leave the log), measured through WebSockets.

    cluster/bench/history_under_load.py [--parley .build/debug/parley] [--writers 64] [--seconds 20] [--deep]

Starts three `parley node` processes on loopback (fsync on, 16 shards), lifts the app's send budgets (this
measures replication, not the A1 limits), enters 64 writers into one room (spread over the three nodes, one
send in flight each) and `--readers` readers on node 1 (default 1), then for `--seconds` each reader asks `fetchHistory` (20
items) back to back while the writers send. With `--deep` the writers first fill the room past its in-memory window
(5,000 items) and the reader asks for the oldest 20 instead (`order: "asc"` from the start), a page the node
reads from its history store. Prints one line: reads, their p50/p99 in ms, and the writers' messages/s.
Bounded; stops the nodes by itself.
"""
import argparse
import asyncio
import os
import secrets
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
from protocol_session import ProtocolSession, kill_groups, start_nodes, wait_ready  # noqa: E402
from signed_api import lift_budgets, signed  # noqa: E402


class Member(ProtocolSession):
    @classmethod
    async def enter(cls, port, app_key, account, room):
        """Enters (once more if the edge did not know the app or the user yet: it learns them from meta; not
        more, since failed logins from one address are throttled after 5)."""
        for _ in range(2):
            m = await cls.open(port)
            answer = await m.call("enter", roomId=room, nickname=account,
                                  auth={"mode": "independent", "appKey": app_key, "account": account, "token": f"{account}-t"})
            if answer.get("ok"):
                return m
            await m.ws.close()
            await asyncio.sleep(3)
        raise RuntimeError(f"enter {account}: {answer}")


WINDOW = 5000  # RoomLimits.maxHistoryPerRoom


async def measure(ports, app_key, writers, seconds, deep, reader_count):
    room = "busy"
    members = [await Member.enter(ports[i % 3], app_key, f"w{i}", room) for i in range(writers)]
    readers = [await Member.enter(ports[0], app_key, f"reader{i}", room) for i in range(reader_count)]
    stop = time.time() + 2 + seconds + (120 if deep else 0)
    sent = [0]

    async def write(m, i):
        n = 0
        while time.time() < stop:
            n += 1
            if (await m.call("sendMessage", roomId=room, body=f"{i}-{n}", clientMessageId=f"{i}-{n}")).get("ok"):
                sent[0] += 1

    tasks = [asyncio.ensure_future(write(m, i)) for i, m in enumerate(members)]
    await asyncio.sleep(2)  # the writers at full speed first
    if deep:
        # Past the window (bounded: at most the 120 s added to `stop`), then the measured seconds.
        while sent[0] < WINDOW + 1000 and time.time() < stop - seconds:
            await asyncio.sleep(0.2)
        stop = time.time() + seconds
    query = {"startTime": 1, "order": "asc"} if deep else {}
    # One untimed read each first: it reads through the room's events queued on the reader's socket while the
    # room filled (thousands with --deep: seconds of this process's time, not the server's).
    for r in readers:
        await r.call("fetchHistory", roomId=room, limit=20, **query)
    latencies, began, sent_at_start = [], time.time(), sent[0]

    async def read(reader):
        checked = False
        while time.time() < stop:
            t = time.perf_counter()
            answer = await reader.call("fetchHistory", roomId=room, limit=20, **query)
            if answer.get("ok"):
                latencies.append((time.perf_counter() - t) * 1000)
                if deep and not checked:
                    # The oldest page: the room's first items (its creation's and entries' notices, then messages).
                    checked = True
                    items = answer.get("data", {}).get("messages", [])
                    if len(items) != 20 or items[0].get("seq", 0) > 70:
                        raise RuntimeError(f"the oldest page is not the room's start: {str(answer)[:300]}")

    await asyncio.gather(*[read(r) for r in readers])
    writes_per_second = (sent[0] - sent_at_start) / (time.time() - began)
    await asyncio.gather(*tasks)
    for m in members + readers:
        await m.ws.close()
    latencies.sort()
    pick = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] if latencies else 0
    return len(latencies), pick(0.5), pick(0.99), writes_per_second


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parley", default=os.path.join(ROOT, ".build/debug/parley"))
    parser.add_argument("--writers", type=int, default=64)
    parser.add_argument("--seconds", type=int, default=20)
    parser.add_argument("--deep", action="store_true", help="read the oldest page, from the history store")
    parser.add_argument("--readers", type=int, default=1, help="readers on node 1, each reading back to back")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="parley-history-bench-")
    app_key, app_secret = "bench", secrets.token_hex(16)
    procs = []
    try:
        started, http_ports, _, _ = start_nodes(args.parley, work, app_key, app_secret)
        procs += started
        base = f"http://127.0.0.1:{http_ports[0]}"
        wait_ready(http_ports)
        lift_budgets(base, app_key, app_secret)
        for account in [f"w{i}" for i in range(args.writers)] + [f"reader{i}" for i in range(args.readers)]:
            signed(base, app_key, app_secret, "/v1/user/create", {"accid": account, "token": f"{account}-t"})
        signed(base, app_key, app_secret, "/v1/room/create", {"roomId": "busy", "creator": "reader0", "name": "Busy"})
        time.sleep(3)  # the edges' view of the app and its users comes from meta, a moment behind the API
        reads, p50, p99, wps = asyncio.run(measure(http_ports, app_key, args.writers, args.seconds, args.deep,
                                                     args.readers))
        print(f"history under load{' (deep pages)' if args.deep else ''}: {args.writers} writers, {args.readers} readers, {reads} reads, p50 {p50:.1f} ms, p99 {p99:.1f} ms, "
              f"{wps:.0f} messages/s written", flush=True)
    finally:
        kill_groups(procs)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
