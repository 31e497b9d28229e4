"""The client side of docs/protocol.md's "Requests, answers, events", written from the document alone with
the `websockets` library: what the interop scripts in this folder share."""
import asyncio
import json

import websockets


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


class Client:
    def __init__(self, ws):
        self.ws = ws
        self.next_id = 0
        self.pending = []  # frames read while waiting for something else

    @classmethod
    async def open(cls, url):
        return cls(await websockets.connect(url, max_size=4 << 20))

    async def read(self, timeout=15.0):
        return json.loads(await asyncio.wait_for(self.ws.recv(), timeout))

    async def call(self, op, **fields):
        self.next_id += 1
        request = {"id": self.next_id, "op": op, **fields}
        await self.ws.send(json.dumps(request))
        return await self.answer(self.next_id)

    async def answer(self, request_id, timeout=15.0):
        for i, frame in enumerate(self.pending):
            if frame.get("id") == request_id and "event" not in frame:
                return self.pending.pop(i)
        while True:
            frame = await self.read(timeout)
            if frame.get("id") == request_id and "event" not in frame:
                return frame
            self.pending.append(frame)

    async def event(self, name, match=lambda e: True, timeout=15.0):
        for i, frame in enumerate(self.pending):
            if frame.get("event") == name and match(frame):
                return self.pending.pop(i)
        while True:
            frame = await self.read(timeout)
            if frame.get("event") == name and match(frame):
                return frame
            self.pending.append(frame)
