"""The chaos suite's clients (cluster/chaos/run.py): writers and readers over the WebSocket protocol
(docs/protocol.md) that record every answer and every event, and reconnect as the SDK does."""
import asyncio
import json
import time

from netlab import Failure
from signed_api import signed

SEND_EVERY = 0.15      # seconds between one client's sends
ANSWER_TIMEOUT = 5.0   # an answer later than this is "unknown", and the connection is given up
DEFINITE = range(13000, 14000)  # room refusals: the command did not apply (5xxx: it may have)


class ChaosClient:
    def __init__(self, name, room, edge, urls, app, token):
        self.name, self.room, self.edge, self.urls, self.app, self.token = name, room, edge, urls, app, token
        self.acked, self.refused, self.unknown = {}, {}, set()
        self.seen, self.gaps = [], []           # room seqs in arrival order; (from, to) named as lost
        self.last_seq = None
        self.reconnects = self.told_lost = self.closed_by_healthy_edge = 0
        self.silent_losses = []
        self.ws, self.reader, self.pending, self.next_id = None, None, {}, 0
        self.abandoned = None                    # the connection a call on it timed out on: no longer read
        self.attempt = 0                         # which address the next connection tries
        self.told_since_enter = False
        self.must_reenter = False
        self.counter = 0
        self.journal = []                        # (time, what) of connects, enters, gaps, losses: for a failure's report

    # -------------------------------------------------------------------------------------------- wire

    async def _call(self, op, **fields):
        self.next_id += 1
        future = asyncio.get_running_loop().create_future()
        # A closed connection fails every call still waiting; one that timed out first is not waiting.
        future.add_done_callback(lambda f: f.cancelled() or f.exception())
        self.pending[self.next_id] = future
        ws = self.ws
        await ws.send(json.dumps({"id": self.next_id, "op": op, **fields}))
        try:
            return await asyncio.wait_for(future, ANSWER_TIMEOUT)
        except asyncio.TimeoutError:
            # The connection is given up, as the SDK gives it up: what still arrives on it is not read. A late
            # enter answer may say gapTooOld, and the events behind it, read without it, looked like a silent
            # hole (57048).
            self.abandoned = ws
            raise

    async def _read(self, ws):
        import websockets
        try:
            async for text in ws:
                frame = json.loads(text)
                if "event" in frame:
                    if ws is not self.abandoned:
                        self._event(frame)
                else:
                    # An answer that comes after its call gave up (ANSWER_TIMEOUT cancelled the future) is
                    # dropped; setting it raised InvalidStateError, which ended this reader and was once
                    # counted as the edge closing the connection.
                    future = self.pending.pop(frame.get("id"), None)
                    if future is not None and not future.done():
                        future.set_result(frame)
        except websockets.ConnectionClosed:
            pass
        except Exception as error:  # this reader's own failure: never the edge's
            self.journal.append((round(time.time(), 2), f"reader failed: {error!r}"))
            self.must_reenter = True
            return
        if ws is self.ws and not getattr(self, "closing", False):
            # Counted against the edge only when the edge ended it (its close frame, or its end of the TCP
            # connection), never when this side gave up.
            received = getattr(ws, "close_rcvd", None)
            sent = getattr(ws, "close_sent", None)
            by_edge = received is not None or sent is None
            if self.connected_edge == self.edge and by_edge:
                self.closed_by_healthy_edge += 1
                self.journal.append((round(time.time(), 2), f"closed by the edge: received {received}, sent {sent}"))
            self.must_reenter = True
        for future in self.pending.values():
            if not future.done():
                future.set_exception(ConnectionError("closed"))
        self.pending.clear()

    def _event(self, frame):
        if frame.get("roomId") != self.room:
            return
        kind, seq, data = frame["event"], frame.get("seq", 0), frame.get("data") or {}
        if kind == "gap":
            self.journal.append((round(time.time(), 2), f"gap {data}"))
            self.gaps.append((data["fromSeq"], data["toSeq"]))
            self.last_seq = max(self.last_seq or 0, data["toSeq"])
        elif kind == "status" and data.get("status") == "lost":
            self.journal.append((round(time.time(), 2), f"told lost on node {self.connected_edge}"))
            self.told_lost += 1
            self.told_since_enter = True
            self.must_reenter = True
        elif kind == "kicked":
            self.silent_losses.append(f"kicked: {data}")
        if seq:
            if self.seen and seq != self.seen[-1] + 1:
                self.journal.append((round(time.time(), 2), f"seq {seq} after {self.seen[-1]}"))
            self.seen.append(seq)
            self.last_seq = max(self.last_seq or 0, seq)

    # ------------------------------------------------------------------------------------- sessions

    async def connect_and_enter(self, deadline):
        """Connects to the next address and enters with the resume point, until it works or `deadline`."""
        import websockets
        while time.time() < deadline:
            await self.close_socket()
            index = self.attempt % len(self.urls)
            self.attempt += 1
            node, url = self.urls[index]
            try:
                self.closing = False
                # No client pings: the client sends every 150 ms anyway, and a ping answered late because this
                # process was starved of CPU would close the connection from this side.
                self.ws = await websockets.connect(url, open_timeout=3, close_timeout=1, max_size=4 << 20,
                                                   ping_interval=None)
                self.connected_edge = node
                self.reader = asyncio.create_task(self._read(self.ws))
                hello = await self._call("hello", versions=[1])
                if not hello.get("ok"):
                    raise ConnectionError(f"hello: {hello}")
                fields = {"roomId": self.room, "nickname": self.name,
                          "auth": {"mode": "independent", "appKey": self.app, "account": self.name, "token": self.token}}
                resume_from = self.last_seq  # replayed events may arrive before this coroutine sees the answer
                if resume_from is not None:
                    fields["lastSeq"] = resume_from
                # So can a `status: lost` that ends the new session at once (its edge's lease ran out while the
                # enter was in flight): the reader counts it before this coroutine resumes, and it must stand.
                lost_before = self.told_lost
                entered = await self._call("enter", **fields)
                if not entered.get("ok"):
                    raise ConnectionError(f"enter: {entered}")
                data = entered.get("data") or {}
                if data.get("gapTooOld") and resume_from is not None:
                    # What the SDK reports as a `gap` event: lastSeq + 1 … replayFromSeq − 1 (docs/protocol.md).
                    start = data.get("replayFromSeq")
                    if start and start > resume_from + 1:
                        self.gaps.append((resume_from + 1, start - 1))
                self.journal.append((round(time.time(), 2), f"entered on node {node} lastSeq={resume_from} "
                                     f"resumed={data.get('resumed')} gapTooOld={data.get('gapTooOld')} "
                                     f"replayFrom={data.get('replayFromSeq')}"))
                told = self.told_lost > lost_before
                self.must_reenter = told
                self.told_since_enter = told
                # Back to its own edge first next time: a client prefers the address it was given.
                self.attempt = 0
                return True
            except Exception:
                await asyncio.sleep(0.2)
        return False

    async def close_socket(self):
        if self.ws is not None:
            self.journal.append((round(time.time(), 2), "closing the socket"))
            self.closing = True
            ws, self.ws = self.ws, None
            try:
                await asyncio.wait_for(ws.close(), 2)
            except Exception:
                pass
            if self.reader:
                self.reader.cancel()

    async def send_one(self):
        self.counter += 1
        cmid = f"{self.name}-{self.counter}"
        try:
            answer = await self._call("sendMessage", roomId=self.room, type="text", body=cmid, clientMessageId=cmid)
        except (asyncio.TimeoutError, ConnectionError, Exception) as error:
            self.journal.append((round(time.time(), 2), f"send {cmid} gave up: {type(error).__name__}"))
            self.unknown.add(cmid)
            self.must_reenter = True
            return None
        if answer.get("ok"):
            self.acked[cmid] = answer["data"]["seq"]
            return cmid
        code = (answer.get("error") or {}).get("code", 0)
        if code == 13100:
            if not self.told_since_enter:
                self.silent_losses.append(f"13100 answered to {cmid} on node {self.connected_edge} without status lost "
                                          f"({answer.get('error')}); journal: {self.journal[-6:]}")
            self.must_reenter = True
        if code in DEFINITE:
            self.refused[cmid] = code
        else:
            self.unknown.add(cmid)
        return None

    async def run(self, until):
        while time.time() < until:
            if self.ws is None or self.must_reenter:
                if self.ws is not None:
                    self.reconnects += 1
                if not await self.connect_and_enter(until):
                    return
            await self.send_one()
            await asyncio.sleep(SEND_EVERY)

    def stream_problems(self):
        problems = []
        for a, b in zip(self.seen, self.seen[1:]):
            if b <= a:
                problems.append(f"seq {b} arrived after {a} (duplicate or out of order)")
                break
        named = set()
        for lo, hi in self.gaps:
            named.update(range(lo, hi + 1))
        if self.seen:
            have = set(self.seen)
            missing = [s for s in range(self.seen[0], self.seen[-1] + 1) if s not in have and s not in named]
            if missing:
                problems.append(f"{len(missing)} seqs neither delivered nor named by a gap, e.g. {missing[:8]}; "
                                f"journal: {self.journal[-12:]}")
        return problems


class Workload:
    def __init__(self, cluster, app, rooms):
        self.cluster, self.app, self.rooms = cluster, app, rooms
        self.clients = []

    async def prepare(self):
        """Users and rooms through the signed server API; one client per room per edge."""
        base = self.cluster.url(1)
        # A node is ready before the app of its --app-file is in the meta group (a moment later): wait for it.
        deadline = time.time() + 30
        while True:
            status, answer = await asyncio.to_thread(signed, base, self.app, self.cluster.app_secret, "/v1/user/get",
                                                     {"accid": "nobody"})
            if status != 401 or time.time() > deadline:
                break
            await asyncio.sleep(0.2)
        for r, room in enumerate(self.rooms):
            for i in self.cluster.ids:
                name = f"u{r}n{i}"
                status, answer = await asyncio.to_thread(signed, base, self.app, self.cluster.app_secret,
                                                         "/v1/user/create", {"accid": name, "token": f"tok-{name}"})
                if status != 200:
                    raise Failure(f"user/create {name}: {status} {answer}")
                urls = [(j, self.cluster.ws(j)) for j in self.cluster.ids[i - 1:] + self.cluster.ids[:i - 1]]
                self.clients.append(ChaosClient(name, room, i, urls, self.app, f"tok-{name}"))
            status, answer = await asyncio.to_thread(signed, base, self.app, self.cluster.app_secret, "/v1/room/create",
                                                     {"roomId": room, "creator": f"u{r}n1", "name": room})
            if status != 200:
                raise Failure(f"room/create {room}: {status} {answer}")
        deadline = time.time() + 30
        for client in self.clients:
            if not await client.connect_and_enter(deadline):
                raise Failure(f"{client.name} could not enter {client.room} before the faults")

    async def run(self, seconds):
        until = time.time() + seconds
        await asyncio.gather(*(c.run(until) for c in self.clients))

    async def drain(self, seconds):
        """After the heal: each client re-enters if it must and sends one last message, then waits until it
        has seen everything acknowledged in its room."""
        deadline = time.time() + seconds
        for client in self.clients:
            while time.time() < deadline:
                if client.ws is None or client.must_reenter:
                    await client.connect_and_enter(deadline)
                if await client.send_one():
                    break
                await asyncio.sleep(0.3)
        for client in self.clients:
            top = max(self.acked(client.room).values(), default=0)
            while time.time() < deadline and (client.last_seq or 0) < top:
                if client.must_reenter:
                    await client.connect_and_enter(deadline)
                await asyncio.sleep(0.1)

    async def close(self):
        for client in self.clients:
            await client.close_socket()

    def acked(self, room):
        return {k: v for c in self.clients if c.room == room for k, v in c.acked.items()}

    def refused(self, room):
        return {k: v for c in self.clients if c.room == room for k, v in c.refused.items()}
