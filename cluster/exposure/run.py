#!/usr/bin/env python3
"""What an unauthenticated stranger can make a real node hold (SPEC A9; issues 23 and 24), measured.

    cluster/exposure/run.py [--parley .build/debug/parley]

Starts three `parley node` processes on loopback (free ports, a temporary data folder), then, against node 1,
measures its resident memory (VmRSS) and whether it closes what it should:
  1. 300 idle peer connections (100 silent, 100 with half the HTTP/2 preface, 100 with preface + SETTINGS):
     all closed by the node within the authentication deadline (5 s) plus slack; RSS within a few MB.
  2. CONTINUATION flood: 3 connections each trying to send 48 MB of HEADERS + CONTINUATION frames without
     END_HEADERS: the node closes them, takes little of it, RSS within a few MB.
  2b. A join credential captured on node 1 and replayed to node 2, then a protocol error and 100 MB of junk:
     cut short and closed, node 2's RSS within a few MB (issue 33).
  3. 1,000 WebSocket connections that each hold an unfinished message (fragments without FIN, before hello),
     against 1,000 that only upgraded: the messages cost under 10 MB in all; all are closed by the hello
     deadline (10 s).
  4. 3 × 500 signed-API requests with a wrong signature, each with a body just under 256 KiB (250 signed with
     NIM's CheckSum, refused on the headers alone; 250 with CheckSum2 only, whose body must be read to check
     it): each is answered (401, or 429 past the bound on bodies read unverified) and closed within a few
     seconds, and together they cost the node a few MB (issue 24: +160 MB and open after 63 s before).
  5. 200 connections announcing CheckSum2-only bodies they never send, while an app server's signed calls to
     the same node still succeed (issue 33).
  6. A lastSeq-0 anonymous enter into a room of 3,000 messages replays no more than the bound (100).
  7. 2,000 WebSockets holding an unfinished message after hello (fragments of 7.9 KB): their cost, and that the
     message deadline closes them (issue 33).
  7b. A friend-request flood from a user the target blocked: held to its budget, and nothing of it in the
     target's log, while another user's request arrives (issue 33).
  8. Captured signed headers (SPEC T2): NIM's CheckSum alone is refused for a new app; once the app chooses it,
     a read's headers carry no token refresh on another node, nor do both checksums stripped of CheckSum2.
  9. A node with a tenth of the default connection caps, filled from eight loopback addresses: they stop at
     their fair shares, and a signed API call and a new client from other addresses still get in (issue 33).
  10. A node serving TLS on its client port (SPEC T1): 500 silent connections, 300 ClientHello trickles
     and 200 finished handshakes followed by nothing are all closed by the head deadline, while an HTTPS
     client is served; plain HTTP to it is closed at once.
Bounded in count and time; stops by itself; prints 'N passed, N failed'.
"""
import argparse
import asyncio
import base64
import hashlib
import hmac
import json
import os
import secrets
import shutil
import signal
import ssl
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
from protocol_session import ProtocolSession, free_ports, rss_kib, start_nodes, wait_ready  # noqa: E402
from signed_api import http, signed, signed_headers  # noqa: E402
results = []


def check(name, ok, detail):
    results.append(ok)
    print(f"[exposure] {'ok  ' if ok else 'FAIL'} {name}: {detail}", flush=True)


def settle_rss(pid, seconds=1.5):
    """RSS after the node has had a moment (freed memory is not always returned at once)."""
    time.sleep(seconds)
    return rss_kib(pid)


# ------------------------------------------------------------------------------------------- raw clients

async def closed_by_peer(reader, timeout):
    """True when the node closes the connection (EOF or reset) within `timeout`."""
    try:
        while True:
            data = await asyncio.wait_for(reader.read(65536), timeout)
            if not data:
                return True
    except (asyncio.TimeoutError,):
        return False
    except (ConnectionError, OSError):
        return True


PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"


def frame(kind, flags, stream, payload):
    return struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", stream) + payload


async def idle_peer_connections(port, count=300, deadline=9.0):
    opened = []
    for i in range(count):
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        if i % 3 == 1:
            writer.write(PREFACE[:12])
        elif i % 3 == 2:
            writer.write(PREFACE + frame(4, 0, 0, b""))
        await writer.drain()
        opened.append((reader, writer))
    closed = await asyncio.gather(*[closed_by_peer(r, deadline) for r, _ in opened])
    for _, w in opened:
        w.close()
    return sum(closed)


def join_credential(secret, from_id, path="/rpc/v1/stream"):
    """The headers a joining node opens its stream with (`PeerAuth`, made for any node: id 0), HPACK-encoded as
    literals without indexing."""
    key = hashlib.sha256(f"parley-cluster-secret:{secret}".encode()).digest()
    now, nonce = str(int(time.time())), secrets.token_hex(16)
    auth = hmac.new(key, f"parley/2 {from_id} 0 {path} {now} {nonce}".encode(), hashlib.sha256).hexdigest()
    fields = [(":method", "POST"), (":scheme", "http"), (":path", path), (":authority", "x"),
              ("x-parley-node", str(from_id)), ("x-parley-time", now), ("x-parley-nonce", nonce),
              ("x-parley-auth", auth), ("parley-peer-version", "4")]
    return b"".join(b"\x00" + bytes([len(n)]) + n.encode() + bytes([len(v)]) + v.encode() for n, v in fields)


async def join_call(port, block):
    """Opens a stream with a join credential (HEADERS `block`) and makes the join call on it. Returns the call's
    answer status, or the refusal's text when the stream itself was refused, or None when nothing came."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    path = b"/rpc/v1/join"
    call = struct.pack(">QH", 1, len(path)) + path
    writer.write(PREFACE + frame(4, 0, 0, b"") + frame(1, 0x4, 1, block) + frame(0, 0, 1, struct.pack(">I", len(call)) + call))
    await writer.drain()
    data, answer = b"", None
    try:
        while answer is None:
            head = await asyncio.wait_for(reader.readexactly(9), 5)
            length, kind, stream = int.from_bytes(head[:3], "big"), head[3], int.from_bytes(head[5:9], "big") & 0x7FFFFFFF
            payload = await asyncio.wait_for(reader.readexactly(length), 5)
            if kind == 4 and not head[4] & 1:
                writer.write(frame(4, 1, 0, b""))  # SETTINGS ack
            if kind != 0 or stream != 1:
                continue
            data += payload
            if data.startswith(b"cluster credentials refused"):
                answer = data.decode(errors="replace")
            elif len(data) >= 4 and len(data) >= 4 + int.from_bytes(data[:4], "big"):
                answer = int.from_bytes(data[12:14], "big")
    except (asyncio.TimeoutError, asyncio.IncompleteReadError, ConnectionError, OSError):
        pass
    writer.close()
    return answer


async def flood_peer(port, opening, chunk, megabytes):
    """Sends `opening`, then `chunk` until `megabytes` went or the node stopped taking them. Returns (bytes the
    node took, whether it closed the connection)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    sent = 0
    try:
        for part in opening:
            writer.write(part)
            await writer.drain()
            await asyncio.sleep(0.5 if len(opening) > 1 else 0)
        while sent < megabytes << 20:
            writer.write(chunk)
            await asyncio.wait_for(writer.drain(), 5)
            sent += len(chunk)
    except (ConnectionError, OSError, asyncio.TimeoutError):
        pass
    gone = await closed_by_peer(reader, 3)
    writer.close()
    return sent, gone


async def join_then_junk(port, block, megabytes=100):
    """Opens a stream with a join credential (HEADERS `block`), then commits a protocol error (DATA on stream 0)
    and sends `megabytes` of junk."""
    return await flood_peer(port, [PREFACE + frame(4, 0, 0, b"") + frame(1, 0x4, 1, block), frame(0, 0, 0, b"x" * 100)],
                            b"\x00" * (1 << 20), megabytes)


async def continuation_flood(port, megabytes=48):
    """HEADERS without END_HEADERS, then CONTINUATION frames (~1 MB a chunk)."""
    return await flood_peer(port, [PREFACE + frame(4, 0, 0, b"") + frame(1, 0, 1, b"\x40" * 16000)],
                            frame(9, 0, 1, b"\x40" * 16000) * 64, megabytes)


async def bad_signature_bodies(port, app_key, count=500, size=250 << 10):
    """`count` connections at once, each sending a signed-API head with a wrong signature and a body of `size`
    bytes as fast as the node takes it; returns [(status, seconds until the node ended the connection)]."""
    async def one(i):
        now = str(int(time.time()))
        sign = (f"CheckSum: {'0' * 40}\r\n" if i % 2 == 0 else f"CheckSum2: {'0' * 64}\r\n")
        head = (f"POST /v1/room/get HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAppKey: {app_key}\r\n"
                f"Nonce: bad-{i}-{secrets.token_hex(4)}\r\nCurTime: {now}\r\n{sign}Content-Length: {size}\r\n\r\n")
        started = time.time()
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            return 0, None
        body = b"{" + b" " * (size - 2) + b"}"
        status = 0

        async def send():
            try:
                writer.write(head.encode())
                for offset in range(0, size, 32 << 10):
                    writer.write(body[offset:offset + (32 << 10)])
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
        sender = asyncio.create_task(send())
        answer = b""
        try:
            while True:
                data = await asyncio.wait_for(reader.read(65536), 30)
                if not data:
                    break
                answer += data
        except (ConnectionError, OSError):
            pass
        except asyncio.TimeoutError:
            sender.cancel()
            writer.close()
            return status, None
        ended = time.time() - started
        sender.cancel()
        writer.close()
        if answer.startswith(b"HTTP/1.1 "):
            status = int(answer[9:12])
        return status, ended
    return await asyncio.wait_for(asyncio.gather(*[one(i) for i in range(count)]), 120)


async def websocket(port, path="/ws", source=None):
    """An upgraded WebSocket (from the local address `source` when given)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=(source, 0) if source else None)
    key = base64.b64encode(secrets.token_bytes(16)).decode()
    writer.write((f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                  f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    if b" 101 " not in head.split(b"\r\n")[0]:
        raise RuntimeError(f"upgrade refused: {head[:80]!r}")
    return reader, writer


def ws_frame(opcode, payload, fin):
    mask = secrets.token_bytes(4)
    head = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    head += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


async def many_websockets(port, count, hold, hello=False, sources=(None,)):
    """`count` upgraded WebSockets (from the local addresses `sources`, in turn); with `hello`, each said hello
    first; with `hold` > 0, each then sends an unfinished text message of two fragments of `hold` bytes and
    keeps it open."""
    conns = []
    for i in range(0, count, 100):
        conns.extend(await asyncio.gather(*[websocket(port, source=sources[(i + j) % len(sources)])
                                            for j in range(min(100, count - i))]))
    if hello:
        frame_ = ws_frame(0x1, json.dumps({"id": 1, "op": "hello", "versions": [1]}).encode(), True)
        for _, w in conns:
            w.write(frame_)
        await asyncio.gather(*[w.drain() for _, w in conns])
        await asyncio.gather(*[asyncio.wait_for(r.readuntil(b'"id":1'), 20) for r, _ in conns])
    if hold:
        for _, w in conns:
            w.write(ws_frame(0x1, b"x" * hold, False) + ws_frame(0x0, b"y" * hold, False))
        await asyncio.gather(*[w.drain() for _, w in conns])
    return conns


async def websockets_phase(pid, port):
    base = settle_rss(pid)
    idle = await many_websockets(port, 1000, hold=0)
    idle_rss = settle_rss(pid)
    # Two fragments of an unfinished text message, 3,900 bytes in all (under the 4 KiB pre-hello cap).
    hoarders = await many_websockets(port, 1000, hold=1950)
    hoard_rss = settle_rss(pid)
    closed = await asyncio.gather(*[closed_by_peer(r, 14) for r, _ in idle + hoarders])
    for _, w in idle + hoarders:
        w.close()
    return base, idle_rss, hoard_rss, sum(closed)


async def silent_checksum2_bodies(port, base, app_key, app_secret, count=200):
    """`count` connections each sending a CheckSum2-only head (public AppKey, current CurTime, a zero CheckSum2,
    Content-Length 200000) and then nothing, held open while an app server makes 5 signed calls to the same node.
    Returns the calls' statuses, how many of the silent connections were still open, and the statuses they got."""
    conns = []
    for i in range(count):
        try:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        except OSError:
            continue
        writer.write((f"POST /v1/room/get HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nAppKey: {app_key}\r\n"
                      f"Nonce: silent-{i}-{secrets.token_hex(4)}\r\nCurTime: {int(time.time())}\r\nCheckSum2: {'0' * 64}\r\n"
                      f"Content-Length: 200000\r\n\r\n").encode())
        conns.append((reader, writer))
    await asyncio.gather(*[w.drain() for _, w in conns], return_exceptions=True)
    await asyncio.sleep(1)
    calls = []
    for _ in range(5):
        status, _ = await asyncio.to_thread(signed, base, app_key, app_secret, "/v1/user/create",
                                            {"accid": f"signed-{secrets.token_hex(4)}", "token": "t"})
        calls.append(status)
    open_ = sum(1 for r, _ in conns if not r.at_eof())
    for _, w in conns:
        w.close()
    return calls, open_, len(conns)


def header_reuse(http_ports, app_key, app_secret):
    """SPEC T2 (issue 33): what captured signed headers can do. Returns [(case, [code per node or attempt])]."""
    bases = [f"http://127.0.0.1:{p}" for p in http_ports]

    def nim(nonce, now):
        return {"AppKey": app_key, "Nonce": nonce, "CurTime": now, "Content-Type": "application/json",
                "CheckSum": hashlib.sha1((app_secret + nonce + now).encode()).hexdigest()}

    def code(status_text):
        status, text = status_text
        try:
            return json.loads(text).get("code", status)
        except ValueError:
            return status
    read, steal = json.dumps({"roomId": "nowhere"}).encode(), json.dumps({"accid": "victim", "token": "stolen"}).encode()
    out = []
    # 1. A new app takes NIM's CheckSum alone nowhere.
    out.append(("a new app refuses NIM's CheckSum alone on every node (10407)",
                [code(http(b + "/v1/room/get", read, nim(secrets.token_hex(8), str(int(time.time()))))) for b in bases]))
    # The app chooses NIM compatibility (signed with CheckSum2); every node's keyring sees it within a second.
    signed(bases[0], app_key, app_secret, "/v1/user/create", {"accid": "victim", "token": "victim-token"})
    signed(bases[0], app_key, app_secret, "/v1/app/setSigning", {"requireSignedBody": False})
    deadline = time.time() + 10
    while time.time() < deadline and any(code(http(b + "/v1/room/get", read, nim(secrets.token_hex(8), str(int(time.time()))))) != 404
                                         for b in bases):
        time.sleep(0.3)
    # 2. The headers of a read on node 1, reused on nodes 2 and 3 for a token refresh.
    headers = nim(secrets.token_hex(8), str(int(time.time())))
    first = code(http(bases[0] + "/v1/room/get", read, headers))
    out.append(("a read's NIM headers carry no token refresh on another node (10406)",
                [first] + [code(http(b + "/v1/user/refreshToken", steal, headers)) for b in bases[1:]]))
    # 3. Both checksums on node 2; stripped of CheckSum2, sent to node 3 with another call.
    nonce, now = secrets.token_hex(8), str(int(time.time()))
    both = nim(nonce, now)
    text = f"parley-v2\nPOST\n/v1/room/get\n{nonce}\n{now}\n{hashlib.sha256(read).hexdigest()}"
    both["CheckSum2"] = hmac.new(app_secret.encode(), text.encode(), hashlib.sha256).hexdigest()
    first = code(http(bases[1] + "/v1/room/get", read, both))
    stripped = {k: v for k, v in both.items() if k != "CheckSum2"}
    out.append(("both checksums, CheckSum2 stripped, carry no other call elsewhere (10406)",
                [first, code(http(bases[2] + "/v1/user/refreshToken", steal, stripped))]))
    signed(bases[0], app_key, app_secret, "/v1/app/setSigning", {"requireSignedBody": True})
    return out


async def after_hello_phase(pid, port):
    """Issue 33: 2,000 members each holding an unfinished message (what one address's cap allowed, the
    finding's case), against 2,000 that only said hello; from four loopback addresses, 1,000 each."""
    base = settle_rss(pid)
    idle = await many_websockets(port, 2000, hold=0, hello=True, sources=("127.0.0.2", "127.0.0.3"))
    idle_rss = settle_rss(pid)
    # 7,900 bytes each in two fragments: under the 8 KiB bound on a message in fragments after hello.
    hoarders = await many_websockets(port, 2000, hold=3950, hello=True, sources=("127.0.0.4", "127.0.0.5"))
    hoard_rss = settle_rss(pid)
    began = time.time()
    closed = await asyncio.gather(*[closed_by_peer(r, 20) for r, _ in hoarders])
    took = time.time() - began
    for _, w in idle + hoarders:
        w.close()
    return base, idle_rss, hoard_rss, sum(closed), took


# ----------------------------------------------------------------------------------------------- resume

async def resume_bound(port, app_key, roomSeqWanted=3000):
    import websockets
    async with websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=4 << 20) as ws:
        async def call(i, op, **fields):
            await ws.send(json.dumps({"id": i, "op": op, **fields}))
        await call(1, "hello", versions=[1])
        anon = {"mode": "anonymous", "appKey": app_key}
        replayed, answer = 0, None
        await call(2, "enter", roomId="big", auth=anon, nickname="G", avatar="a", lastSeq=0)
        end = time.time() + 10
        while time.time() < end:
            try:
                frame_ = json.loads(await asyncio.wait_for(ws.recv(), 1.5))
            except asyncio.TimeoutError:
                break
            if frame_.get("id") == 2:
                answer = frame_
            elif frame_.get("event") in ("message", "notification") and frame_.get("seq", 0) > 0:
                replayed += 1
        return answer, replayed


def fill_room(base, app_key, secret, count, connections=15):
    """A room with `count` messages, sent over WebSockets as the room's creator (the server API's rate is one
    signed call per message). The app's message budgets (A1) are lifted first, as an operator would for a
    busy room; each connection keeps under its own request budget by retrying a 416 after `retryAfterMs`."""
    import websockets
    status, answer = signed(base, app_key, secret, "/v1/app/setBudgets",
                            {"userMessagesPerSecond": 1000000, "userBurst": 1000000,
                             "roomMessagesPerSecond": 1000000, "roomBurst": 1000000})
    if status != 200:
        raise SystemExit(f"setBudgets: {status} {answer}")

    async def one(lane, share):
        async with websockets.connect(f"ws://{base.split('//')[1]}/ws", max_size=4 << 20) as ws:
            async def call(i, **fields):
                await ws.send(json.dumps({"id": i, **fields}))
                while True:
                    f = json.loads(await asyncio.wait_for(ws.recv(), 10))
                    if f.get("id") == i and "event" not in f:
                        return f
            await call(1, op="hello", versions=[1])
            auth = {"mode": "independent", "appKey": app_key, "account": "filler", "token": "filler-token"}
            await call(2, op="enter", roomId="big", auth=auth, nickname="F")
            i = 0
            while i < share:
                f = await call(10 + i, op="sendMessage", roomId="big", body=f"m{lane}-{i}")
                if f.get("ok"):
                    i += 1
                elif (f.get("error") or {}).get("code") == 416:
                    await asyncio.sleep(f["error"].get("retryAfterMs", 10) / 1000)
                else:
                    raise SystemExit(f"sendMessage refused: {f}")

    async def send_all():
        shares = [count // connections + (1 if k < count % connections else 0) for k in range(connections)]
        await asyncio.gather(*(one(k, n) for k, n in enumerate(shares)))
    asyncio.run(send_all())


async def guess_tokens(port, app_key, tries=6):
    """Enters with wrong tokens, one connection each (a wrong token closes the connection); the codes."""
    import websockets
    codes = []
    for i in range(tries):
        async with websockets.connect(f"ws://127.0.0.1:{port}/ws") as ws:
            await ws.send(json.dumps({"id": 1, "op": "hello", "versions": [1]}))
            await ws.recv()
            auth = {"mode": "independent", "appKey": app_key, "account": "filler", "token": f"guess-{i}"}
            await ws.send(json.dumps({"id": 2, "op": "enter", "roomId": "big", "auth": auth, "nickname": "G"}))
            try:
                answer = json.loads(await asyncio.wait_for(ws.recv(), 5))
                codes.append(answer.get("error", {}).get("code"))
            except Exception:
                codes.append(None)
    return codes


# ------------------------------------------------------------------------------------------- IM requests

class ImSession(ProtocolSession):
    """A logged-in IM connection (docs/protocol.md, "IM")."""

    @classmethod
    async def login(cls, port, app_key, account, token):
        session = await cls.open(port)
        answer = await session.call("imLogin", auth={"mode": "im", "appKey": app_key, "account": account, "token": token})
        if not answer.get("ok"):
            raise RuntimeError(f"imLogin {account}: {answer}")
        return session


async def blocked_requests(port, base, app_key, app_secret, seconds=5.0, connections=5):
    """Issue 33 (medium 3): eve, whom dave blocked, floods dave with friend requests from five connections;
    then bob asks once. Returns (eve's requests answered ok, answered 416, elapsed, what dave's log holds from
    eve and from bob)."""
    # The defaults again (fill_room lifted the app's budgets for its busy room).
    status, answer = signed(base, app_key, app_secret, "/v1/app/setBudgets",
                            {"userMessagesPerSecond": 10, "userBurst": 20, "roomMessagesPerSecond": 200, "roomBurst": 400})
    if status != 200:
        raise SystemExit(f"setBudgets: {status} {answer}")
    for account in ("dave", "eve", "bob"):
        signed(base, app_key, app_secret, "/v1/user/create", {"accid": account, "token": f"{account}-token"})
    dave = await ImSession.login(port, app_key, "dave", "dave-token")
    await dave.call("setBlocked", target="eve", blocked=True)
    eves = [await ImSession.login(port, app_key, "eve", "eve-token") for _ in range(connections)]
    counts = {"ok": 0, 416: 0, "other": 0}
    started = time.time()

    async def flood(session):
        i = 0
        while time.time() < started + seconds:
            i += 1
            answer = await session.call("friend", target="dave", operation="request", message=f"spam {i}")
            if answer.get("ok"):
                counts["ok"] += 1
            elif answer.get("error", {}).get("code") == 416:
                counts[416] += 1
                await asyncio.sleep(0.01)
            else:
                counts["other"] += 1
    await asyncio.gather(*[flood(s) for s in eves])
    elapsed = time.time() - started
    bob = await ImSession.login(port, app_key, "bob", "bob-token")
    await bob.call("friend", target="dave", operation="request", message="hello")
    # Bob's request comes through the relay too: wait for it, then read dave's whole log.
    from_bob, from_eve = 0, 0
    deadline = time.time() + 15
    while time.time() < deadline:
        items = (await dave.call("syncIm", afterSeq=0, limit=500)).get("data", {}).get("items", [])
        from_bob = sum(1 for i in items if i.get("source") == "bob")
        from_eve = sum(1 for i in items if i.get("source") == "eve")
        if from_bob:
            break
        await asyncio.sleep(0.3)
    for s in eves + [dave, bob]:
        await s.ws.close()
    return counts, elapsed, from_eve, from_bob


# ------------------------------------------------------------------------------------------- fair caps

def capped_node(parley, work, app_key, app_secret):
    """One more node, a cluster of its own, with a tenth of the default caps (1,500 connections, 200 per
    source: the same proportions), so eight loopback addresses can try to fill it. Returns (process, port)."""
    http_port, peer_port = free_ports(2)
    log = open(os.path.join(work, "node-capped.log"), "ab")
    proc = subprocess.Popen(
        [parley, "node", "--id", "1", "--listen", f"127.0.0.1:{http_port}", "--peer-listen", f"127.0.0.1:{peer_port}",
         "--data", os.path.join(work, "ncapped"), "--secret", secrets.token_hex(16), "--shards", "4", "--replicas", "1",
         "--drain-seconds", "0", "--app", f"{app_key}:{app_secret}", "--max-connections", "1500",
         "--max-connections-per-address", "200"],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, http_port


def signed_from(source, port, app_key, app_secret, path, fields):
    """A signed POST sent from the local address `source` (a loopback address of its own): the HTTP status."""
    import http.client
    body = json.dumps(fields).encode()
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10, source_address=(source, 0))
        conn.request("POST", path, body, signed_headers(app_key, app_secret, path, body))
        status = conn.getresponse().status
        conn.close()
        return status
    except OSError:
        return 0


async def held_websocket(port, source):
    """A WebSocket from `source` that said hello (so it stays until the idle timeout), or None when refused."""
    try:
        reader, writer = await asyncio.wait_for(websocket(port, source=source), 10)
        writer.write(ws_frame(0x1, json.dumps({"id": 1, "op": "hello", "versions": [1]}).encode(), True))
        await writer.drain()
        await asyncio.wait_for(reader.readuntil(b'"id":1'), 10)
        return writer
    except (OSError, RuntimeError, asyncio.TimeoutError, asyncio.IncompleteReadError):
        return None


async def fair_caps_phase(port, base, app_key, app_secret):
    """Issue 33, medium 6: a client in a room, then eight addresses opening WebSockets until each is refused
    (ten refusals in a row), then a signed API call and a new client from addresses of their own, and the
    first client's next message. Returns the figures."""
    import websockets
    signed(base, app_key, app_secret, "/v1/user/create", {"accid": "keeper", "token": "keeper-token"})
    signed(base, app_key, app_secret, "/v1/room/create", {"roomId": "kept", "creator": "keeper", "name": "Kept"})
    keeper = await websockets.connect(f"ws://127.0.0.1:{port}/ws")
    await keeper.send(json.dumps({"id": 1, "op": "hello", "versions": [1]}))
    await keeper.send(json.dumps({"id": 2, "op": "enter", "roomId": "kept", "nickname": "K",
                                  "auth": {"mode": "independent", "appKey": app_key, "account": "keeper",
                                           "token": "keeper-token"}}))

    async def answer(ws, wanted):
        while True:
            frame_ = json.loads(await asyncio.wait_for(ws.recv(), 10))
            if frame_.get("id") == wanted:
                return frame_
    entered = await answer(keeper, 2)

    async def flood(source):
        held, refusals = [], 0
        while refusals < 10:
            w = await held_websocket(port, source)
            if w is None:
                refusals += 1
            else:
                held.append(w)
                refusals = 0
        return held
    floods = await asyncio.wait_for(asyncio.gather(*[flood(f"127.0.0.{i}") for i in range(2, 10)]), 120)
    held = sum(len(f) for f in floods)
    api = signed_from("127.0.0.10", port, app_key, app_secret, "/v1/room/get", {"roomId": "kept"})
    newcomer = await held_websocket(port, "127.0.0.11")
    await keeper.send(json.dumps({"id": 3, "op": "sendMessage", "roomId": "kept", "type": "text", "body": "still here",
                                  "clientMessageId": "k-1"}))
    sent = await answer(keeper, 3)
    for w in [w for f in floods for w in f] + ([newcomer] if newcomer else []):
        w.close()
    await keeper.close()
    return entered.get("ok"), [len(f) for f in floods], held, api, newcomer is not None, sent.get("ok")


# ------------------------------------------------------------------------------------------- TLS client port

def tls_node(parley, work):
    """One more node, a cluster of its own, serving TLS on its client port (SPEC T1) with a self-signed
    certificate for localhost. Returns (process, client port, certificate path)."""
    folder = os.path.join(work, "tls")
    os.makedirs(folder)
    cert, key = os.path.join(folder, "edge.pem"), os.path.join(folder, "edge.key")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost"], check=True, capture_output=True)
    http_port, peer_port = free_ports(2)
    log = open(os.path.join(work, "node-tls.log"), "ab")
    proc = subprocess.Popen(
        [parley, "node", "--id", "1", "--listen", f"127.0.0.1:{http_port}", "--peer-listen", f"127.0.0.1:{peer_port}",
         "--data", os.path.join(work, "ntls"), "--secret", secrets.token_hex(16), "--shards", "4", "--replicas", "1",
         "--drain-seconds", "0", "--tls-cert", cert, "--tls-key", key],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    return proc, http_port, cert


def tls_context(cert):
    context = ssl.create_default_context(cafile=cert)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    return context


async def https_healthz(port, cert, timeout=5.0):
    """True when GET /healthz over TLS (verified against `cert`, name localhost) answers 200."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, ssl=tls_context(cert), server_hostname="localhost"), timeout)
        writer.write(b"GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        await writer.drain()
        answer = await asyncio.wait_for(reader.read(4096), timeout)
        writer.close()
        return answer.startswith(b"HTTP/1.1 200")
    except (OSError, ssl.SSLError, asyncio.TimeoutError):
        return False


# A TLS 1.2/1.3 ClientHello's first bytes: a handshake record header announcing 512 bytes, then the start of
# the hello. A trickle sends these a byte at a time and never the rest.
CLIENT_HELLO_START = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03])


async def tls_stranger(port, kind, deadline):
    """One connection to the TLS port that never authenticates: `silent` (TCP only), `trickle` (a ClientHello a
    byte a second), `handshake` (a full handshake, then nothing). Returns (closed by the node, seconds)."""
    started = time.time()
    try:
        if kind == "handshake":
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
            reader, writer = await asyncio.wait_for(
                asyncio.open_connection("127.0.0.1", port, ssl=context, server_hostname="localhost"), 10)
        else:
            reader, writer = await asyncio.open_connection("127.0.0.1", port)
        if kind == "trickle":
            async def drip():
                for byte in CLIENT_HELLO_START:
                    writer.write(bytes([byte]))
                    await writer.drain()
                    await asyncio.sleep(1)
            dripping = asyncio.ensure_future(drip())
        closed = await closed_by_peer(reader, deadline)
        if kind == "trickle":
            dripping.cancel()
        writer.close()
        return closed, time.time() - started
    except (OSError, ssl.SSLError, asyncio.TimeoutError):
        return True, time.time() - started


async def tls_phase(pid, port, cert):
    """Strangers on the TLS port (500 silent, 300 ClientHello trickles, 200 completed handshakes that then
    say nothing) while a real HTTPS client keeps asking: returns the checks' figures. They are opened 100 at a
    time so the listen backlog takes them all at once (a connection the kernel queued past it is accepted, and
    its deadline started, only later)."""
    before = rss_kib(pid)
    tasks = []
    for kind, count in (("silent", 500), ("trickle", 300), ("handshake", 200)):
        for i in range(count):
            tasks.append(asyncio.ensure_future(tls_stranger(port, kind, 20)))
            if len(tasks) % 100 == 0:
                await asyncio.sleep(0.2)
    await asyncio.sleep(3)
    during = rss_kib(pid)
    served = [await https_healthz(port, cert) for _ in range(5)]
    outcomes = await asyncio.gather(*tasks)
    plain_started = time.time()
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
    await writer.drain()
    answer = b""
    try:
        answer = await asyncio.wait_for(reader.read(4096), 5)
    except (ConnectionError, OSError, asyncio.TimeoutError):
        pass
    writer.close()
    return before, during, served, outcomes, (answer, time.time() - plain_started)


def metric(text, name, labels):
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


# ------------------------------------------------------------------------------------------------- main

def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parley", default=os.path.join(ROOT, ".build/debug/parley"))
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="parley-exposure-")
    app_key, app_secret = "exposure", secrets.token_hex(16)
    procs = []
    try:
        started, http_ports, peer_ports, secret = start_nodes(args.parley, work, app_key, app_secret)
        procs += started
        base = f"http://127.0.0.1:{http_ports[0]}"
        wait_ready(http_ports)
        pid = procs[0].pid

        before = settle_rss(pid)
        closed = asyncio.run(idle_peer_connections(peer_ports[0]))
        after = settle_rss(pid)
        check("300 idle peer connections closed by the authentication deadline", closed == 300, f"{closed}/300 closed")
        # ~27 KB each, kept by the allocator after they close: 7.7-7.9 MB on release builds of sessions 29 and 30
        # alike, 7.8-8.4 MB on a debug build (2026-11-28), where 8 MiB had been the bound. A leak of what a
        # connection holds would show as tens of MB.
        check("300 idle peer connections cost little", after - before < 12 << 10, f"RSS {before} → {after} KiB")

        before = settle_rss(pid)
        async def floods():
            return await asyncio.wait_for(asyncio.gather(*[continuation_flood(peer_ports[0]) for _ in range(3)]), 60)
        flood = asyncio.run(floods())
        after = settle_rss(pid)
        taken = [sent >> 20 for sent, _ in flood]
        check("a CONTINUATION flood is cut short and closed", all(gone for _, gone in flood) and max(taken) < 24,
              f"MB taken per connection {taken}")
        check("a CONTINUATION flood costs little", after - before < 8 << 10, f"RSS {before} → {after} KiB")

        # Issue 33: a join credential is made for any node. Used on node 1, then replayed to node 2 within its
        # window: the member claims it cluster-wide, so node 2 answers the join call 401.
        block = join_credential(secret, 9)
        first, replayed = asyncio.run(join_call(peer_ports[0], block)), asyncio.run(join_call(peer_ports[1], block))
        check("a join credential used on node 1 is refused when replayed to node 2", first == 200 and replayed == 401,
              f"node 1 answered {first!r}, node 2 {replayed!r}")
        # And a connection opened with one (node 2's is a replay of the one node 1 took) keeps the bounds of an
        # unauthenticated connection. (Node 1 is measured by the phases below: it is left alone here.)
        before2 = settle_rss(procs[1].pid)
        taken, gone = asyncio.run(join_then_junk(peer_ports[1], block))
        after2 = settle_rss(procs[1].pid)
        check("a join credential replayed to another node: a protocol error plus junk is cut short and closed",
              gone and taken < 24 << 20, f"node 2 took {taken >> 20} MB, closed {gone}")
        check("a replayed join credential costs little", after2 - before2 < 8 << 10, f"node 2's RSS {before2} → {after2} KiB")

        base_rss, idle_rss, hoard_rss, ws_closed = asyncio.run(websockets_phase(pid, http_ports[0]))
        # The second thousand are new connections too: what their messages cost is what they cost beyond
        # what the first thousand (upgraded, silent) did.
        # The 2,000 hoarders' cost less what 2,000 idle connections cost. The allocator may hand memory of the
        # earlier phases back while the idle ones connect (RSS fell 5–9 MB then in session 27's runs, the hoard
        # costing what it did before): a connection never costs less than nothing, so that is not added back.
        messages = (hoard_rss - idle_rss) - max(0, idle_rss - base_rss)
        check("1,000 unfinished messages before hello cost under 10 MB",
              messages < 10 << 10,
              f"RSS {base_rss} → {idle_rss} (+1,000 idle) → {hoard_rss} KiB (+1,000 holding 3.9 KB each): "
              f"the messages cost {messages} KiB")
        check("every connection without hello is closed by the hello deadline", ws_closed == 2000, f"{ws_closed}/2000 closed")

        # Three rounds: the first grows the allocator's arenas for 500 connections at once (a one-time cost
        # that spread 8-27 MiB between runs of one binary), and the second may still add some (up to +9.5 MiB
        # seen, on this session's build and the one before alike); the third, on warmed arenas, shows whether
        # anything of a refused body is kept. All stay far below the 122 MiB a round's bodies hold.
        before = settle_rss(pid)
        refused = asyncio.run(bad_signature_bodies(http_ports[0], app_key))
        warmed = settle_rss(pid)
        refused += asyncio.run(bad_signature_bodies(http_ports[0], app_key))
        second = settle_rss(pid)
        refused += asyncio.run(bad_signature_bodies(http_ports[0], app_key))
        after = settle_rss(pid)
        statuses = {}
        for status, _ in refused:
            statuses[status] = statuses.get(status, 0) + 1
        ended = sorted(t for _, t in refused if t is not None)
        # 0: the node closed while this client was still sending its body, so the kernel answered the rest
        # with a reset, which can overtake the 401 (the close is the point: nothing more is read). At least half
        # must be such refusals of the signature (401, or its close overtaking it) rather than 429s of the
        # unverified-body bound; how many resets overtake a 401 depends on the machine's load at the moment
        # (697 401s and 172 resets in one run of session 21, 840 and none in the next).
        check("3 × 500 bad-signature bodies are each refused (401, 429 past the unverified-body bound, or reset)",
              set(statuses) <= {401, 429, 0} and statuses.get(401, 0) + statuses.get(0, 0) >= 750, f"statuses {statuses}")
        check("3 × 500 bad-signature bodies are each closed within 10 s", len(ended) == 1500 and ended[-1] < 10,
              f"{len(ended)}/1500 ended; median {ended[len(ended) // 2] if ended else 0:.2f} s, "
              f"slowest {ended[-1] if ended else 0:.2f} s")
        counted = metric(http(f"{base}/metrics")[1], "parley_api_auth_failures_total", {"code": "10429"})
        check("every 10429 (unverified bytes over the node's budget) is counted",
              counted >= statuses.get(429, 0), f"{statuses.get(429, 0)} answered 429, {counted:.0f} counted")
        check("500 bad-signature bodies cost little (first round, arenas included)", warmed - before < 32 << 10,
              f"RSS {before} → {warmed} KiB")
        check("1,000 more bad-signature bodies keep nothing (the third round under 8 MiB, the second and third under 16)",
              after - second < 8 << 10 and after - warmed < 16 << 10, f"RSS {warmed} → {second} → {after} KiB")

        # Issue 33: strangers announcing CheckSum2-only bodies they never send hold no budget a signed caller
        # needs (64 such sockets used to take every unverified-body slot of a node for the request deadline).
        calls, still_open, silent = asyncio.run(silent_checksum2_bodies(http_ports[0], base, app_key, app_secret))
        check("200 silent CheckSum2-only bodies do not stop signed calls on their node",
              calls == [200] * 5 and silent == 200, f"signed calls {calls} beside {still_open}/{silent} silent bodies still open")

        # Issue 33: after hello a connection could hold a 64 KiB unfinished message for ever (a byte of
        # continuation now and then): 106 KB each, +207 MB at the per-address cap. Now fragments total at most
        # 8 KiB and a message must be finished within 10 s. (After the bad-signature rounds, whose RSS checks are
        # sensitive to what the allocator did before them.)
        base_rss, idle_rss, hoard_rss, hoard_closed, took = asyncio.run(after_hello_phase(pid, http_ports[0]))
        # The 2,000 hoarders' cost less what 2,000 idle connections cost. The allocator may hand memory of the
        # earlier phases back while the idle ones connect (RSS fell 5–9 MB then in session 27's runs, the hoard
        # costing what it did before): a connection never costs less than nothing, so that is not added back.
        messages = (hoard_rss - idle_rss) - max(0, idle_rss - base_rss)
        check("2,000 unfinished messages after hello cost under 40 MB (before: +207 MB)", messages < 40 << 10,
              f"RSS {base_rss} → {idle_rss} (+2,000 after hello) → {hoard_rss} KiB (+2,000 holding 7.9 KB each): "
              f"the messages cost {messages} KiB")
        check("every unfinished message after hello is closed by the message deadline (10 s; 20 s allowed)",
              hoard_closed == 2000, f"{hoard_closed}/2000 closed, the last after {took:.1f} s")

        for account, token in (("filler", "filler-token"),):
            signed(base, app_key, app_secret, "/v1/user/create", {"accid": account, "token": token})
        signed(base, app_key, app_secret, "/v1/room/create", {"roomId": "big", "creator": "filler", "name": "Big"})
        started = time.time()
        fill_room(base, app_key, app_secret, 3000)
        answer, replayed = asyncio.run(resume_bound(http_ports[0], app_key))
        data = (answer or {}).get("data", {})
        check("a lastSeq-0 enter into a room of 3,000 messages replays at most the bound (100)",
              data.get("gapTooOld") is True and replayed <= 100,
              f"room seq {data.get('room', {}).get('seq')}, replayed {replayed}, gapTooOld {data.get('gapTooOld')}, "
              f"filled in {time.time() - started:.0f} s")

        expected = {"a new app refuses NIM's CheckSum alone on every node (10407)": [10407] * 3,
                    "a read's NIM headers carry no token refresh on another node (10406)": [404, 10406, 10406],
                    "both checksums, CheckSum2 stripped, carry no other call elsewhere (10406)": [404, 10406]}
        for name, got in header_reuse(http_ports, app_key, app_secret):
            check(name, got == expected[name], f"codes {got} (first the original request's)")

        # Issue 33 (medium 3): friend requests are budgeted, and a blocked user's stop at the blocklist (before,
        # ~6,350 in 10 s from 5 connections went into the target's log and pushed a real message out of it).
        counts, elapsed, from_eve, from_bob = asyncio.run(blocked_requests(http_ports[0], base, app_key, app_secret))
        check("a friend-request flood is held to its budget (416 past it)",
              counts[416] > 0 and counts["ok"] < 60 + 20 * elapsed and counts["other"] == 0,
              f"{counts['ok']} accepted, {counts[416]} answered 416, {counts['other']} other in {elapsed:.1f} s")
        check("a blocked user's friend requests never reach the blocker; another user's do",
              from_eve == 0 and from_bob == 1, f"dave's log: {from_eve} items from eve (blocked), {from_bob} from bob")

        codes = asyncio.run(guess_tokens(http_ports[0], app_key))
        metrics = http(f"{base}/metrics")[1]
        bad, throttled = (metric(metrics, "parley_edge_auth_failures_total", {"reason": r}) for r in ("badToken", "throttled"))
        log = open(os.path.join(work, "node-1.log"), errors="replace").read()
        check("wrong tokens are slowed: after 5 from one address the 6th is refused with 4017",
              codes[:5] == [4010] * 5 and codes[5] == 4017, f"codes {codes}")
        check("refused logins are counted and logged", bad >= 5 and throttled >= 1 and "refused client logins" in log,
              f"parley_edge_auth_failures_total badToken {bad:.0f}, throttled {throttled:.0f}; "
              f"log lines {log.count('refused client logins')}")

        # Issue 33 (medium 6): the connection cap is no lockout. Eight addresses filling a node (a tenth of the
        # default caps) stop at their shares of what is left; a signed API call and a new client from
        # addresses of their own still get in, and a client already in a room keeps talking.
        capped_proc, capped_port = capped_node(args.parley, work, app_key, app_secret)
        procs.append(capped_proc)
        capped_base = f"http://127.0.0.1:{capped_port}"
        started = time.time()
        while time.time() < started + 60 and http(f"{capped_base}/readyz")[0] != 200:
            time.sleep(0.3)
        entered, per_source, held, api, newcomer, sent = asyncio.run(
            fair_caps_phase(capped_port, capped_base, app_key, app_secret))
        check("8 addresses filling the connection cap stop at their fair shares (under 1,200 of 1,500)",
              entered and held < 1200, f"held {held} ({per_source} per address)")
        check("with the cap under attack a signed API call from another address is served", api == 200, f"status {api}")
        check("with the cap under attack a new client from another address connects, and a client in a room keeps talking",
              newcomer and sent, f"newcomer admitted {newcomer}, the room member's next message ok {sent}")

        # SPEC T1 (issue 33): the client port over TLS holds strangers to the same deadline as plain HTTP: the
        # head deadline (10 s) runs from the connection's opening, so a handshake never finished, dripped, or
        # finished and followed by nothing is closed by it, and a real HTTPS client is served meanwhile.
        tls_proc, tls_port, tls_cert = tls_node(args.parley, work)
        procs.append(tls_proc)
        started = time.time()
        while time.time() < started + 60 and not asyncio.run(https_healthz(tls_port, tls_cert, 1)):
            time.sleep(0.3)
        # Three rounds: the first ones grow the allocator's arenas (TLS state for 200 handshakes at once: +33,
        # +17, then +6 MB in a trial of five rounds, +1 MB by the fifth); the third, on warmed arenas, shows
        # whether anything of a closed stranger is kept.
        first = asyncio.run(tls_phase(tls_proc.pid, tls_port, tls_cert))
        asyncio.run(tls_phase(tls_proc.pid, tls_port, tls_cert))
        warmed = settle_rss(tls_proc.pid)
        before, during, served, outcomes, (plain, plain_took) = asyncio.run(tls_phase(tls_proc.pid, tls_port, tls_cert))
        after = settle_rss(tls_proc.pid)
        outcomes = first[3] + outcomes
        kinds = [("silent", 0, 500), ("trickle", 500, 800), ("handshake", 800, 1000)]
        for kind, lo, hi in kinds:
            group = outcomes[lo:hi] + outcomes[1000 + lo:1000 + hi]
            closed = sum(1 for gone, _ in group if gone)
            slowest = max(t for _, t in group)
            check(f"TLS port: 2 × {hi - lo} {kind} strangers closed by the head deadline (10 s; 20 s allowed)",
                  closed == 2 * (hi - lo) and slowest < 20, f"{closed}/{2 * (hi - lo)} closed, the last after {slowest:.1f} s")
        check("TLS port: an HTTPS client is served while 1,000 strangers hold connections",
              first[2] == [True] * 5 and served == [True] * 5, f"/healthz answered {first[2]} then {served}")
        check("TLS port: 1,000 strangers cost little (first round, arenas included)", first[1] - first[0] < 48 << 10,
              f"RSS {first[0]} → {first[1]} KiB holding them, {warmed} KiB after")
        check("TLS port: 1,000 more strangers keep nothing (third round)", after - warmed < 10 << 10,
              f"RSS {warmed} → {during} (holding) → {after} KiB (after)")
        check("TLS port: plain HTTP is closed at once, unanswered", not plain.startswith(b"HTTP") and plain_took < 2,
              f"answer {plain[:20]!r} after {plain_took:.2f} s")
    finally:
        for p in procs:
            try:
                os.killpg(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for p in procs:
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
        if all(results):
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"[exposure] kept {work} (node logs)")
    passed = sum(results)
    print(f"exposure: {passed} passed, {len(results) - passed} failed")
    return 0 if results and all(results) else 1


if __name__ == "__main__":
    sys.exit(main())
