"""What the bounded suites under cluster/ share to talk to nodes as a client would (docs/protocol.md)."""
import asyncio
import json
import socket


def free_ports(n):
    """`n` TCP ports free on loopback now."""
    socks = [socket.socket() for _ in range(n)]
    for s in socks:
        s.bind(("127.0.0.1", 0))
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


class ProtocolSession:
    """One client WebSocket: calls answered by id; pushed frames (events) are skipped."""

    def __init__(self, ws):
        self.ws, self.next_id = ws, 0

    @classmethod
    async def open(cls, port, max_size=16 << 20):
        import websockets
        session = cls(await websockets.connect(f"ws://127.0.0.1:{port}/ws", max_size=max_size))
        await session.call("hello", versions=[1])
        return session

    async def call(self, op, timeout=30, **fields):
        self.next_id += 1
        wanted = self.next_id
        await self.ws.send(json.dumps({"id": wanted, "op": op, **fields}))
        while True:
            frame = json.loads(await asyncio.wait_for(self.ws.recv(), timeout))
            if frame.get("id") == wanted and "event" not in frame:
                return frame
