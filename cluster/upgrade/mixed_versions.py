#!/usr/bin/env python3
"""A rolling upgrade's middle, on real processes: some nodes run the older build, the rest the newer one, and
clients on every node send messages to rooms whose shard leaders sit on either kind of node — so commands go
from old nodes to new leaders and from new nodes to old ones (issue 18: adjacent versions run side by side).

    python3 cluster/upgrade/mixed_versions.py --old OLD_PARLEY --new NEW_PARLEY [--old-nodes 1] [--rooms 24] [--upgrade]

Checks, for every message: the sender's answer is ok and names the message's serverId (> 0), the same id its
own copy of the message event carries (issue 34: from peer protocol 7 a forwarded answer carries the id, not
the message); a resend with the same clientMessageId is answered with the same seq; an app's request for
IM pre-send checks (peer protocol 9) is answered 503 while an older node runs; and an app's after-event
callbacks (peer protocol 10: a shard command and snapshot form older nodes cannot read) make no shard keep
copies while an older node runs; and no shard takes the rooms' history window bound (peer protocol 12, SPEC D1)
while an older node runs; a message sent with a priority goes as a normal one, and an app's room ceiling is
answered 503, while an older node runs (peer protocol 13, SPEC D3); a supergroup is answered 503 while an
older node runs (peer protocol 14, issue 38); and no shard takes the IM logs' window bound while an older node
runs (peer protocol 15, issue 38 item 5); and one-to-one messages sent through every node's server API reach their
receivers' shards, whichever build leads them, once each at the answered seq (peer protocol 16, issue 34: IM
commands on the room commands' call once every node reads them there); and every node still runs at the end
(peer protocol 17, issue 34: entries that carry a request as it came, which older nodes cannot read, are written
only once every node reads them). `--upgrade` then finishes the upgrade — each old node killed and started on
the newer build over its data — and checks everything again once every node speaks the newer protocol. Bounded: 3 nodes,
--rooms rooms per node, about a minute; the nodes are killed at the end. Exit status 1 on any mismatch.
"""
import argparse
import asyncio
import json
import os
import secrets
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
from protocol_session import ProtocolSession, kill_groups, start_node, start_nodes, wait_ready  # noqa: E402
from signed_api import http, signed  # noqa: E402


class Sender(ProtocolSession):
    """A session that keeps the message events it sees, by clientMessageId."""

    def __init__(self, ws):
        super().__init__(ws)
        self.seen = {}

    def pushed(self, frame):
        data = frame.get("data") or {}
        if frame.get("event") == "message" and data.get("clientMessageId"):
            self.seen[data["clientMessageId"]] = data

    async def event_for(self, client_id, timeout=10):
        deadline = time.time() + timeout
        while client_id not in self.seen and time.time() < deadline:
            try:
                self.pushed(json.loads(await asyncio.wait_for(self.ws.recv(), max(0.1, deadline - time.time()))))
            except asyncio.TimeoutError:
                break
        return self.seen.get(client_id)


async def check(ports, app_key, rooms, labels, gated_open, tag=""):
    failures = []
    sent = 0
    for n, port in enumerate(ports):
        for r in range(rooms):
            account, room = f"n{n + 1}-u{r}", f"mixed-{r}"
            s = None
            for _ in range(3):
                s = await Sender.open(port)
                entered = await s.call("enter", roomId=room, nickname=account,
                                       auth={"mode": "independent", "appKey": app_key, "account": account,
                                             "token": f"{account}-t"})
                if entered.get("ok"):
                    break
                await s.ws.close()
                s = None
                await asyncio.sleep(2)
            if s is None:
                failures.append(f"{labels[n]} node {n + 1}: enter {room} as {account}: {entered}")
                continue
            client_id = f"{account}{tag}-m"
            answer = await s.call("sendMessage", roomId=room, body=f"from {labels[n]} node {n + 1}", clientMessageId=client_id)
            sent += 1
            data = answer.get("data") or {}
            event = await s.event_for(client_id)
            where = f"{labels[n]} node {n + 1}, room {room}"
            if not answer.get("ok"):
                failures.append(f"{where}: send refused: {answer}")
            elif not data.get("serverId"):
                failures.append(f"{where}: answer without a serverId: {answer}")
            elif event is None:
                failures.append(f"{where}: own message event never came")
            elif event.get("serverId") != data["serverId"] or event.get("seq") != data.get("seq"):
                failures.append(f"{where}: answer {data} names another message than the event {event}")
            again = await s.call("sendMessage", roomId=room, body=f"from {labels[n]} node {n + 1}", clientMessageId=client_id)
            if (again.get("data") or {}).get("seq") != data.get("seq"):
                failures.append(f"{where}: the resend was answered {again}, the send {answer}")
            # SPEC D3: a priority is written (command tag 40) only once every node reads it (peer protocol
            # 13); until then the message goes as a normal one, neither refused nor lost.
            low_id = f"{account}{tag}-low"
            low = await s.call("sendMessage", roomId=room, body="low", clientMessageId=low_id, priority="low")
            low_event = await s.event_for(low_id)
            if not low.get("ok") or low_event is None:
                failures.append(f"{where}: a low-priority send: {low}, its event {low_event}")
            elif labels[n] == "new" and low_event.get("priority") != ("low" if gated_open else None):
                failures.append(f"{where}: a low-priority message came as {low_event.get('priority')} "
                                f"(every node reads priorities: {gated_open})")
            await s.ws.close()
    return sent, failures


def one_to_one(ports, labels, app_key, app_secret, users, tag=""):
    """Sends a message from each node's users to the next node's through that node's server API, resends it,
    then reads every receiver's log through the last node: each message is there once, at its answered seq."""
    failures, acked = [], {}
    for n, port in enumerate(ports):
        base = f"http://127.0.0.1:{port}"
        for u in range(users):
            sender, receiver, msg_id = f"n{n + 1}-u{u}", f"n{(n + 1) % 3 + 1}-u{u}", f"p2p{tag}-{n}-{u}"
            fields = {"from": sender, "to": receiver, "body": f"via {labels[n]} node {n + 1}", "msgId": msg_id}
            code, answer = signed(base, app_key, app_secret, "/v1/msg/sendMsg", fields)
            seq = (answer.get("data") or {}).get("seq")
            if code != 200 or not seq:
                failures.append(f"{labels[n]} node {n + 1}: sendMsg {sender} → {receiver}: {code} {answer}")
                continue
            again_code, again = signed(base, app_key, app_secret, "/v1/msg/sendMsg", fields)
            if again_code != 200 or (again.get("data") or {}).get("seq") != seq:
                failures.append(f"{labels[n]} node {n + 1}: the resend of {msg_id} was answered {again_code} {again}, "
                                f"the send seq {seq}")
            acked[(receiver, msg_id)] = seq
    base = f"http://127.0.0.1:{ports[-1]}"
    for receiver in sorted({r for r, _ in acked}):
        code, answer = signed(base, app_key, app_secret, "/v1/msg/sync", {"accid": receiver, "afterSeq": 0, "limit": 500})
        items = (answer.get("data") or {}).get("items") or [] if code == 200 else []
        for (r, msg_id), seq in acked.items():
            if r != receiver:
                continue
            seqs = [i.get("seq") for i in items if i.get("msgId") == msg_id]
            if seqs != [seq]:
                failures.append(f"{receiver}'s log holds {msg_id} at {seqs}, answered {seq} (sync: {code})")
    return len(acked), failures


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True, help="the older parley build")
    parser.add_argument("--new", required=True, help="the newer parley build")
    parser.add_argument("--old-nodes", type=int, default=1, help="how many of the 3 nodes run the older build")
    parser.add_argument("--rooms", type=int, default=24)
    parser.add_argument("--upgrade", action="store_true",
                        help="then finish the upgrade: restart each old node on the newer build (a kill, on its data), "
                             "and check again once every node speaks the newer protocol")
    args = parser.parse_args()
    binaries = [args.old] * args.old_nodes + [args.new] * (3 - args.old_nodes)
    labels = ["old"] * args.old_nodes + ["new"] * (3 - args.old_nodes)
    work = tempfile.mkdtemp(prefix="parley-mixed-")
    procs = []
    try:
        app_key, app_secret = "mixed", secrets.token_hex(16)
        procs, ports, peer_ports, cluster_secret = start_nodes(binaries, work, app_key, app_secret, shards=16)
        wait_ready(ports)
        base = f"http://127.0.0.1:{ports[-1]}"
        # The app's send budgets stay on (A1): a client's message then always reaches its leader by a call
        # between nodes, never inside Raft, so answers cross versions (unbudgeted, a follower proposes it).
        # The nodes learn the configured app from the meta group a moment after they answer: the first call is
        # tried again while the app is not known yet (10402), so a slow start is not taken for a failure.
        deadline = time.time() + 30
        while True:
            code, answer = signed(base, app_key, app_secret, "/v1/user/create", {"accid": "probe", "token": "probe-t"})
            if code == 200 or time.time() > deadline or answer.get("code") != 10402:
                break
            time.sleep(0.5)
        for n in range(3):
            for r in range(args.rooms):
                account = f"n{n + 1}-u{r}"
                code, answer = signed(base, app_key, app_secret, "/v1/user/create", {"accid": account, "token": f"{account}-t"})
                if code != 200:
                    raise RuntimeError(f"user/create: {code} {answer}")
        for r in range(args.rooms):
            code, answer = signed(base, app_key, app_secret, "/v1/room/create",
                                  {"roomId": f"mixed-{r}", "creator": "n1-u0", "name": "Mixed"})
            if code != 200:
                raise RuntimeError(f"room/create: {code} {answer}")
        # After-event callbacks are kept by shards only once every node reads their outbox (peer protocol 10):
        # the app may ask for them now, and every message below goes on as before.
        code, answer = signed(base, app_key, app_secret, "/v1/app/setWebhooks",
                              {"url": "https://203.0.113.9/parley", "events": ["room.message", "room.enter"]})
        if code != 200:
            raise RuntimeError(f"setWebhooks with events: {code} {answer}")
        time.sleep(3)  # the edges learn the app's users from meta
        # What the older build speaks decides which of the gated features must wait for it.
        code, text = http(f"http://127.0.0.1:{ports[0]}/status")
        old_protocol = json.loads(text).get("peerProtocol", 1) if code == 200 else 1
        print(json.dumps({"olderPeerProtocol": old_protocol}))
        sent, failures = asyncio.run(check(ports, app_key, args.rooms, labels, old_protocol >= 13))
        # SPEC D3: a room ceiling (meta command tag 15) waits for every node too: 503 beside an older one.
        code, answer = signed(base, app_key, app_secret, "/v1/app/setBudgets", {"roomDeliveredPerSecond": 50})
        if old_protocol < 13 and (code != 503 or answer.get("code") != 10503):
            failures.append(f"setBudgets with a room ceiling beside an older node: {code} {answer}")
        if old_protocol >= 13 and code != 200:
            failures.append(f"setBudgets with a room ceiling: {code} {answer}")
        if old_protocol < 10:
            for n, port in enumerate(ports):
                code, text = http(f"http://127.0.0.1:{port}/status")
                hooks = json.loads(text).get("webhooks") or [] if code == 200 else []
                if any(w.get("afterEvents") for w in hooks):
                    failures.append(f"{labels[n]} node {n + 1} keeps after-event copies beside an older node: {hooks}")
        # A feature older nodes would ignore waits for them: an app cannot ask for IM pre-send checks (peer
        # protocol 9) while a node that would store IM messages unchecked runs (503, code 10503).
        code, answer = signed(base, app_key, app_secret, "/v1/app/setWebhooks",
                              {"url": "https://203.0.113.9/parley", "preSend": {"im": True}})
        if old_protocol < 9 and (code != 503 or answer.get("code") != 10503):
            failures.append(f"setWebhooks with preSend.im beside an older node: {code} {answer}")
        # Read receipts (peer protocol 11) wait for every node: beside an older one the server API answers 10503
        # and nothing is written; once all speak 11 they are read.
        signed(base, app_key, app_secret, "/v1/user/create", {"accid": "reader", "token": "reader-token"})
        code, answer = signed(base, app_key, app_secret, "/v1/msg/conversations", {"accid": "reader"})
        if old_protocol < 11 and (code != 503 or answer.get("code") != 10503):
            failures.append(f"/v1/msg/conversations beside an older node: {code} {answer}")
        if old_protocol >= 11 and code != 200:
            failures.append(f"/v1/msg/conversations: {code} {answer}")
        # Issue 38: a supergroup (team command tag 18, feed events of tag 3) waits for every node (peer protocol
        # 14): 503 beside an older node, nothing made; an advanced team is made either way.
        code, answer = signed(base, app_key, app_secret, "/v1/team/create",
                              {"tid": "hall", "owner": "reader", "tname": "Hall", "type": "superTeam"})
        if old_protocol < 14 and (code != 503 or answer.get("code") != 10503):
            failures.append(f"a supergroup beside an older node: {code} {answer}")
        if old_protocol >= 14 and code != 200:
            failures.append(f"a supergroup: {code} {answer}")
        code, answer = signed(base, app_key, app_secret, "/v1/team/create", {"tid": "kite", "owner": "reader", "tname": "Kite"})
        if code != 200:
            failures.append(f"an advanced team: {code} {answer}")
        # Issue 34 (peer protocol 16): IM commands take the room commands' call (`/rpc/v1/propose`) only once every
        # node reads them there; until then a newer node sends them to `/rpc/v1/im/propose` in its older form.
        # One-to-one messages through every node's server API to receivers on every shard — so leaders of both
        # builds take them from callers of both — each answered with the receiver's seq, a resend with the same.
        im_sent, im_failures = one_to_one(ports, labels, app_key, app_secret, args.rooms)
        failures += im_failures
        print(json.dumps({"oneToOneMessages": im_sent}))
        # SPEC D1: the rooms' window bound is a room command (tag 39) older nodes cannot read: no shard leader
        # proposes it while one runs (peer protocol 12), and every message above went on all the same. Issue 38
        # item 5: the IM logs' window bound (IM command tag 9, IM snapshot version 4) waits the same way (15).
        bounds = [(12, "shardsWithWindowBound", "the window bound"),
                  (15, "shardsWithImLogWindowBound", "the IM log window bound")]
        for n, port in enumerate(ports):
            code, text = http(f"http://127.0.0.1:{port}/status")
            memory = (json.loads(text).get("memory") or {}) if code == 200 else {}
            for protocol, field, what in bounds:
                if old_protocol < protocol and memory.get(field, 0) != 0:
                    failures.append(f"{labels[n]} node {n + 1}: shards took {what} beside an older node: {memory}")
        if args.upgrade:
            # The upgrade's end: each old node killed and started on the newer build over its own data — it
            # replays entries the older leaders wrote — one at a time, each ready before the next. Then every
            # node speaks the newer protocol, leaders write what only it reads (peer protocol 17: form-4
            # entries), and everything is checked again, with new ids.
            for n in range(args.old_nodes):
                kill_groups([procs[n]])
                procs[n].wait()
                procs[n] = start_node(args.new, n, work, ports, peer_ports, cluster_secret, app_key, app_secret)
                wait_ready([ports[n]])
            time.sleep(4)  # each driver asks every second whether every node reads the newer forms
            labels = ["new"] * 3
            protocols = []
            for port in ports:
                code, text = http(f"http://127.0.0.1:{port}/status")
                protocols.append(json.loads(text).get("peerProtocol") if code == 200 else None)
            print(json.dumps({"upgradedPeerProtocols": protocols}))
            if len(set(protocols)) != 1 or protocols[0] is None:
                failures.append(f"after the upgrade the nodes speak {protocols}")
            after, after_failures = asyncio.run(check(ports, app_key, args.rooms, labels, True, tag="-after"))
            im_after, im_after_failures = one_to_one(ports, labels, app_key, app_secret, args.rooms, tag="-after")
            failures += after_failures + im_after_failures
            sent += after
            print(json.dumps({"afterUpgrade": {"messages": after, "oneToOneMessages": im_after}}))
        # Every node still runs: a node that met a log entry it cannot read stops rather than skip it, so an
        # older node alive here read everything the newer ones wrote (peer protocol 17, issue 34: leaders put a
        # request into the entry as it came only once every node reads that form).
        for n, p in enumerate(procs):
            if p.poll() is not None:
                failures.append(f"{labels[n]} node {n + 1} exited ({p.returncode}): see its log")
        # Which kind of node led the shards: a run where old nodes led nothing (or everything) would not have
        # sent commands both ways.
        led = {}
        for n, port in enumerate(ports):
            code, text = http(f"http://127.0.0.1:{port}/status")
            status = json.loads(text) if code == 200 else {}
            led[f"{labels[n]} node {n + 1}"] = sum(1 for s in status.get("shards", []) if s.get("role") == "leader")
        print(json.dumps({"shardsLed": led}))
        if any(v == 0 for v in led.values()):
            failures.append(f"a node led no shard, so not every path was taken: {led}")
    finally:
        kill_groups(procs)
    for f in failures:
        print("FAIL", f)
    print(json.dumps({"nodes": labels, "messages": sent, "failures": len(failures)}))
    if not failures and not os.environ.get("KEEP"):
        shutil.rmtree(work, ignore_errors=True)
    else:
        print(f"logs kept in {work}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
