"""What the bounded suites under cluster/ share to talk to nodes as a client would (docs/protocol.md)."""
import asyncio
import json
import socket
import time

from signed_api import http


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
            self.pushed(frame)

    def pushed(self, frame):
        """A frame that is not the awaited answer (an event, another call's answer): skipped here."""


def start_nodes(parley, work, app_key, app_secret, count=3, shards=16, extra=(), env=None):
    """`count` founding `parley node` processes on loopback (fsync on, one cluster secret, one server-API
    app), each in its own session (kill its group to stop it). Returns (processes, client ports, peer ports,
    cluster secret); the logs are WORK/node-N.log. `parley`: one binary for all, or a list of one per node
    (a rolling upgrade's middle). `extra`: more options for every node; `env`: more environment for them."""
    import secrets
    ports = free_ports(2 * count)
    http_ports, peer_ports = ports[:count], ports[count:]
    cluster_secret = secrets.token_hex(16)
    procs = [start_node(parley[i] if isinstance(parley, list) else parley, i, work, http_ports, peer_ports, cluster_secret,
                        app_key, app_secret, shards, extra, env) for i in range(count)]
    return procs, http_ports, peer_ports, cluster_secret


def start_node(parley, i, work, http_ports, peer_ports, cluster_secret, app_key, app_secret, shards=16, extra=(), env=None):
    """Node i + 1 of `start_nodes`' cluster, started (or started again, on its data: a restart, an upgrade to
    another build) with `parley`; its log is appended to."""
    import os
    import subprocess
    peers = ",".join(f"{k + 1}=127.0.0.1:{peer_ports[k]}" for k in range(len(peer_ports)))
    log = open(os.path.join(work, f"node-{i + 1}.log"), "ab")
    return subprocess.Popen(
        [parley, "node", "--id", str(i + 1), "--listen", f"127.0.0.1:{http_ports[i]}",
         "--peer-listen", f"127.0.0.1:{peer_ports[i]}", "--peers", peers, "--data", os.path.join(work, f"n{i + 1}"),
         "--secret", cluster_secret, "--shards", str(shards), "--app", f"{app_key}:{app_secret}", "--drain-seconds", "0",
         *extra],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, **env} if env else None)


def rss_kib(pid):
    """The process's resident memory (VmRSS), KiB; 0 once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("VmRSS:")), 0)
    except OSError:
        return 0


def kill_groups(procs):
    """SIGKILL to each process's group (start_nodes starts each node in a session of its own)."""
    import os
    import signal
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def wait_ready(http_ports, seconds=60):
    """Waits until every node answers `/readyz` 200 (at most `seconds`)."""
    deadline = time.time() + seconds
    while time.time() < deadline and not all(http(f"http://127.0.0.1:{p}/readyz")[0] == 200 for p in http_ports):
        time.sleep(0.3)
