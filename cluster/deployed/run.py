#!/usr/bin/env python3
"""Runs Parley the way it is deployed, and checks that it works (issue 15).

    sudo cluster/deployed/run.py [--parley .build/debug/parley] [--layout compose|k8s|dev|all]

Needs root (it makes network namespaces and switches user); everything it makes it removes again, also
when a check fails. Bounded: every wait has a deadline, and the whole run stops by itself.

- compose: three `parley node` processes, each in a network namespace of its own with its own address on a
  bridge (as compose services have), reached by the compose service names (an /etc/hosts per namespace),
  run as the image's non-root user (name and uid read from docker/Dockerfile; created when missing) with
  the data folder the image uses (`PARLEY_DATA`, bind-mounted from a folder that user owns), configured
  only by the environment docker/Dockerfile and docker/compose.yaml give it (read from those files, so a
  disagreement between the files and the code fails here). Checks: the cluster forms; the room smoke test
  (a room made through the signed server API; two clients on two nodes exchange messages); kill -9 of a
  node: the clients keep talking, the API keeps answering; the killed node restarts and catches up.
- k8s: the same with cluster/k8s/ (ConfigMap + Secret environment, the StatefulSet's start command that
  computes the id from the pod's hostname, the pods' DNS names).
- dev: the README's quick start (`parley dev`, then its signed calls and a client) as that non-root user.

The test's own client runs in a namespace of its own too, so every byte crosses the bridge.
"""
import argparse
import asyncio
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
from netlab import Failure, Lab, check, enter_namespace, leave_namespace, netns, sh, wait_for  # noqa: E402
import signed_api  # noqa: E402
PREFIX = "pdep"  # every namespace, interface and file this test makes starts with it
LAB = Lab(PREFIX)
SUBNET = "10.213.61"  # addresses of the test's own hosts, inside its own namespaces only
CLIENT_NS = f"{PREFIX}-c"
# SPEC T1: the deployments serve TLS on the client port. What the test's clients trust (the CA the deployment's
# certificate tool made) and the name they expect in the certificate; set per layout, None for plain HTTP.
CLIENT_TLS = {"ca": None, "name": None, "by_address": {}}


def tls_context(check_name=True):
    import ssl
    if not CLIENT_TLS["ca"]:
        return None
    context = ssl.create_default_context(cafile=CLIENT_TLS["ca"])
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    # urllib checks the URL's host, here a namespace's address: the chain is still checked against the CA;
    # the WebSocket clients check the certificate's name as well (Client.open).
    context.check_hostname = check_name
    return context


def http(url, body=None, headers=None, timeout=5):
    return signed_api.http(url, body, headers, timeout, context=tls_context(False) if url.startswith("https:") else None)


def signed(base, app_key, app_secret, path, fields):
    return signed_api.signed(base, app_key, app_secret, path, fields,
                             context=tls_context(False) if base.startswith("https:") else None)
MADE_MOUNT_POINTS = []  # folders made on the host only to mount the nodes' data folders on; removed at the end


def log(*words):
    print("[deployed]", *words, flush=True)


# ---------------------------------------------------------------------------------------------- the files

def image_user():
    """The runtime user of docker/Dockerfile: `useradd ... --uid N ... NAME`."""
    text = open(os.path.join(ROOT, "docker/Dockerfile")).read()
    m = re.search(r"useradd\b[^\n]*?--uid\s+(\d+)[^\n]*?\s(\w+)\s*\\?\s*$", text, re.M)
    check(m, "docker/Dockerfile: no `useradd --uid N NAME` line")
    user_line = re.search(r"^USER\s+(\S+)", text, re.M)
    check(user_line and user_line.group(1) == m.group(2), "docker/Dockerfile must run as the user it creates")
    return m.group(2), int(m.group(1))


def image_env():
    """The ENV lines of the runtime stage of docker/Dockerfile and its ENTRYPOINT."""
    text = open(os.path.join(ROOT, "docker/Dockerfile")).read()
    runtime = text[text.rfind("\nFROM "):]
    env = {}
    for line in re.findall(r"^ENV\s+(.+)$", runtime, re.M):
        for key, value in re.findall(r"(\w+)=(\S+)", line):
            env[key] = value
    entry = json.loads(re.search(r"^ENTRYPOINT\s+(\[.*\])\s*$", runtime, re.M).group(1))
    workdir = re.findall(r"^WORKDIR\s+(\S+)", runtime, re.M)
    return env, entry, (workdir[-1] if workdir else "/")


def interpolate(value, outside):
    """Compose's ${NAME}, ${NAME:-default} and ${NAME:?message} against `outside`."""
    def one(m):
        name, op, arg = m.group(1), m.group(2), m.group(3)
        if op == ":?" and not outside.get(name):
            raise Failure(f"compose needs {name}: {arg}")
        if op == ":-" and not outside.get(name):
            return arg or ""
        return outside.get(name, "")
    return re.sub(r"\$\{(\w+)(?:(:[-?])([^}]*))?\}", one, str(value))


def compose_nodes(outside, user, work):
    """[(service, hostname, env)] from docker/compose.yaml, with the image's ENV under it. The one-shot service
    that makes the peer certificates runs first, as compose runs it: its entrypoint (the image's copy of
    cluster/certs.sh), as the image's user, into a folder that stands for its volume; the nodes get
    that folder at the path their volume line gives."""
    doc = yaml.safe_load(open(os.path.join(ROOT, "docker/compose.yaml")))
    base, entry, workdir = image_env()
    volumes = {}  # named volume → the folder standing for it
    for name, service in sorted(doc["services"].items()):
        if "PARLEY_ID" in (service.get("environment") or {}):
            continue
        volume, target = service["volumes"][0].split(":")[:2]
        volumes[volume] = os.path.join(work, f"volume-{volume}")
        os.makedirs(volumes[volume], mode=0o700)
        os.chown(volumes[volume], user.pw_uid, user.pw_gid)
        check(service["entrypoint"][0] == "/usr/local/bin/parley-certs", f"compose: {name} runs {service['entrypoint']}")
        script = os.path.join(ROOT, "cluster/certs.sh")
        kind = service["entrypoint"][1]
        args = [volumes[volume] if a == target else interpolate(a, outside)
                for a in service["entrypoint"][1:] + (service.get("command") or [])]
        sh("setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", "sh", script, *args)
        log(f"compose: {name} made {kind} certificates for {', '.join(args[2:])}")
        if kind == "client":
            # Clients trust the CA it made and reach the nodes by PARLEY_PUBLIC_HOST (its first name).
            CLIENT_TLS.update(ca=os.path.join(volumes[volume], "ca.pem"), name=args[2])
    nodes = []
    for name, service in sorted(doc["services"].items()):
        if "PARLEY_ID" not in (service.get("environment") or {}):
            continue
        env = dict(base)
        for key, value in (service.get("environment") or {}).items():
            env[key] = interpolate(value, outside)
        lines = [v.split(":") for v in service.get("volumes", [])]
        data = next(target for volume, target, *_ in lines if volume not in volumes)
        nodes.append({"name": name, "hostname": service.get("hostname", name), "env": env,
                      "argv": entry[1:], "workdir": workdir, "joins": bool(service.get("profiles")),
                      "http": int(env["PARLEY_LISTEN"].rsplit(":", 1)[1]),
                      "ops": int(env.get("PARLEY_OPS_LISTEN", env["PARLEY_LISTEN"]).rsplit(":", 1)[1]),
                      "mount": data, "extra_mounts": [(volumes[v], t) for v, t, *_ in lines if v in volumes]})
    return nodes


def k8s_nodes(outside, user, work):
    """The StatefulSet's pods: ConfigMap + Secret environment, its start command, DNS names, and the peer TLS
    Secret an operator makes with cluster/certs.sh (cluster/k8s/peer-tls.example.yaml), mounted where the
    pods mount it with its keys as file names."""
    docs = {}
    for file in ("configmap.yaml", "secret.example.yaml", "statefulset.yaml", "services.yaml"):
        for doc in yaml.safe_load_all(open(os.path.join(ROOT, "cluster/k8s", file))):
            if doc:
                docs[(doc["kind"], doc["metadata"]["name"])] = doc
    sts = docs[("StatefulSet", "parley")]
    pod = sts["spec"]["template"]["spec"]
    container = pod["containers"][0]
    base, _, workdir = image_env()
    env = dict(base)
    for source in container.get("envFrom", []):
        if "configMapRef" in source:
            env.update({k: str(v) for k, v in docs[("ConfigMap", source["configMapRef"]["name"])]["data"].items()})
        if "secretRef" in source:
            # The example Secret's keys, with the values an operator would create (never the example's).
            for key in docs[("Secret", source["secretRef"]["name"])]["stringData"]:
                check(key in outside, f"the test has no value for the Secret's {key}")
                env[key] = outside[key]
    service = sts["spec"]["serviceName"]
    mount = next(m["mountPath"] for m in container["volumeMounts"] if m["name"] == "data")
    secret_volumes = {v["name"] for v in pod.get("volumes", []) if "secret" in v}
    extra = []
    for m in container["volumeMounts"]:
        if m["name"] in secret_volumes:
            made = os.path.join(work, f"{m['name']}-made")
            os.makedirs(made, mode=0o700)
            if os.path.dirname(env.get("PARLEY_TLS_CERT", "")) == m["mountPath"]:
                # The client port's Secret, as cluster/k8s/client-tls.example.yaml makes it without cert-manager:
                # valid for every pod's name; the test's clients trust its CA and check the pods' names.
                # (Each pod's short name: a wildcard must have two labels after its star to match.)
                sh("sh", os.path.join(ROOT, "cluster/certs.sh"), "client", made,
                   *[f"{sts['metadata']['name']}-{n}.{sts['spec']['serviceName']}" for n in range(SCALED_TO)])
                files = (("client.pem", "tls.crt"), ("client.key", "tls.key"))
                CLIENT_TLS.update(ca=os.path.join(made, "ca.pem"), name=None)
            else:
                sh("sh", os.path.join(ROOT, "cluster/certs.sh"), "peer", made, "parley-peer")
                files = (("parley-peer.pem", "tls.crt"), ("parley-peer.key", "tls.key"), ("ca.pem", "ca.crt"))
            secret = os.path.join(work, f"secret-{m['name']}")
            os.makedirs(secret, mode=0o750)
            for source, key in files:
                shutil.copy(os.path.join(made, source), os.path.join(secret, key))
                os.chown(os.path.join(secret, key), 0, user.pw_gid)  # defaultMode 0440 + fsGroup, as the pod sees it
                os.chmod(os.path.join(secret, key), 0o440)
            os.chown(secret, 0, user.pw_gid)
            extra.append((secret, m["mountPath"]))
    check(pod["securityContext"]["runAsUser"] == image_user()[1], "the StatefulSet's runAsUser is the image's user")
    nodes = []
    # The StatefulSet's pods, and the two more of `kubectl scale statefulset/parley --replicas=5`.
    for ordinal in range(SCALED_TO):
        host = f"{sts['metadata']['name']}-{ordinal}"
        nodes.append({"name": host, "hostname": f"{host}.{service}", "env": dict(env, HOSTNAME=host),
                      "joins": ordinal >= sts["spec"]["replicas"],
                      "argv": None, "command": container["command"] + container["args"], "workdir": workdir,
                      "http": int(env["PARLEY_LISTEN"].rsplit(":", 1)[1]),
                      "ops": int(env.get("PARLEY_OPS_LISTEN", env["PARLEY_LISTEN"]).rsplit(":", 1)[1]), "mount": mount,
                      "extra_mounts": extra})
    return nodes


# ------------------------------------------------------------------------------------------ the network

# ---------------------------------------------------------------------------------------------- clients

class Client:
    """A WebSocket client of docs/protocol.md (hello, enter, sendMessage, events)."""

    def __init__(self, ws):
        self.ws, self.next_id, self.pending = ws, 0, []

    @classmethod
    async def open(cls, url):
        import websockets
        if url.startswith("wss:"):
            # The name the certificate must hold: the public name (compose), or the pod's DNS name (k8s).
            address = url.split("//", 1)[1].rsplit(":", 1)[0]
            name = CLIENT_TLS["name"] or CLIENT_TLS["by_address"][address]
            return cls(await websockets.connect(url, max_size=4 << 20, open_timeout=5, ssl=tls_context(),
                                                server_hostname=name))
        return cls(await websockets.connect(url, max_size=4 << 20, open_timeout=5))

    async def call(self, op, timeout=5.0, **fields):
        self.next_id += 1
        await self.ws.send(json.dumps({"id": self.next_id, "op": op, **fields}))
        return await self.wait(lambda f: f.get("id") == self.next_id and "event" not in f, timeout)

    async def wait(self, match, timeout=5.0):
        for i, frame in enumerate(self.pending):
            if match(frame):
                return self.pending.pop(i)
        end = time.time() + timeout
        while True:
            frame = json.loads(await asyncio.wait_for(self.ws.recv(), max(0.01, end - time.time())))
            if match(frame):
                return frame
            self.pending.append(frame)

    async def message(self, body, timeout=10.0):
        return await self.wait(lambda f: f.get("event") == "message" and f.get("data", {}).get("body") == body, timeout)


async def enter(url, app_key, room, account, token):
    client = await Client.open(url)
    hello = await client.call("hello", versions=[1])
    check(hello.get("ok"), f"hello on {url}: {hello}")
    entered = await client.call("enter", roomId=room, nickname=account,
                                auth={"mode": "independent", "appKey": app_key, "account": account, "token": token})
    check(entered.get("ok"), f"enter {room} as {account} on {url}: {entered}")
    return client


async def send_until_ok(client, room, body, seconds=20):
    """Sends until the room takes it (a shard without a leader answers an error for a moment)."""
    deadline, last = time.time() + seconds, None
    while time.time() < deadline:
        last = await client.call("sendMessage", roomId=room, type="text", body=body, clientMessageId=body)
        if last.get("ok"):
            return last
        await asyncio.sleep(0.25)
    raise Failure(f"sendMessage {body!r} never succeeded: {last}")


async def exchange(a, b, room, tag):
    """a → b and b → a, each seen by the other across nodes."""
    await send_until_ok(b, room, f"{tag}: from b")
    await a.message(f"{tag}: from b")
    await send_until_ok(a, room, f"{tag}: from a")
    await b.message(f"{tag}: from a")


# ---------------------------------------------------------------------------------------------- the node

class Deployment:
    def __init__(self, parley, user, layout, nodes, work):
        self.parley, self.user, self.layout, self.nodes, self.work = parley, user, layout, nodes, work
        self.procs = {}
        for i, node in enumerate(nodes):
            node["ns"] = f"{PREFIX}-n{i + 1}"
            node["address"] = f"{SUBNET}.{11 + i}"
            CLIENT_TLS["by_address"][node["address"]] = node["hostname"]
            node["data"] = os.path.join(work, f"data-{i + 1}")
            node["log"] = os.path.join(work, f"node-{i + 1}.log")
            os.makedirs(node["data"], mode=0o700)
            os.chown(node["data"], user.pw_uid, user.pw_gid)

    def start(self, i):
        node = self.nodes[i]
        if node.get("command"):
            # The pod's own command, with the image's entrypoint binary at the path the image puts it.
            command = [c.replace("/usr/local/bin/parley", self.parley) for c in node["command"]]
        else:
            command = [self.parley] + node["argv"]
        out = open(node["log"], "ab")
        self.procs[i] = subprocess.Popen(self.inside(i, command), stdout=out, stderr=subprocess.STDOUT,
                                         start_new_session=True)
        log(f"{self.layout}: started {node['name']} ({node['hostname']}, {node['address']}) pid {self.procs[i].pid}")

    def exec(self, i, arguments, seconds):
        """`parley ARGUMENTS` in node i's container, as `docker compose exec` or `kubectl exec` runs it: its
        network, its mounts, its user, its environment. Returns (exit status, output)."""
        result = subprocess.run(self.inside(i, [self.parley] + arguments), capture_output=True, text=True,
                                timeout=seconds)
        return result.returncode, result.stdout + result.stderr

    def inside(self, i, command):
        """The argv that runs `command` in node i's network namespace, with its folders mounted where the
        deployment mounts them, as the image's user, with only the environment the deployment files give."""
        node = self.nodes[i]
        # Only what the deployment files set reaches the node, as in a container (plus PATH for the shell
        # of the StatefulSet's command).
        env = dict(node["env"], PATH="/usr/local/bin:/usr/bin:/bin")
        mount = node["mount"]
        for target in [mount] + [t for _, t in node.get("extra_mounts", [])]:
            missing = []
            while not os.path.exists(target):
                missing.append(target)
                target = os.path.dirname(target)
            for path in reversed(missing):
                os.mkdir(path)
                MADE_MOUNT_POINTS.insert(0, path)  # deepest first when they are removed
        # In the namespace's own mount namespace (ip netns exec makes one): the user's folder at the path
        # the image uses (and the certificates where the deployment mounts them, read-only), then drop to the
        # image's user and exec the command (the pid is the node's).
        binds = "".join(f'mount --bind "{source}" "{target}" && mount -o remount,bind,ro "{target}" && '
                        for source, target in node.get("extra_mounts", []))
        script = (binds + 'mount --bind "$2" "$1" && cd "$1" && shift 3 && '
                  'exec setpriv --reuid="$UID_" --regid="$GID_" --init-groups --reset-env env -i "$@"')
        return [*netns(node["ns"]), "env", f"UID_={self.user.pw_uid}", f"GID_={self.user.pw_gid}", "sh", "-c", script,
                "sh", mount, node["data"], "--", *[f"{k}={v}" for k, v in sorted(env.items())], *command]

    def stop(self, i, seconds=60):
        """SIGTERM, as `docker compose stop` or a pod's deletion sends; waits for the exit."""
        proc = self.procs.pop(i)
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(seconds)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)
            raise Failure(f"{self.nodes[i]['name']} did not stop within {seconds} s of SIGTERM")

    def kill9(self, i):
        proc = self.procs.pop(i)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)

    def stop_all(self):
        for i, proc in list(self.procs.items()):
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        for i, proc in list(self.procs.items()):
            try:
                proc.wait(15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        self.procs.clear()

    def url(self, i, path=""):
        scheme = "https" if self.nodes[i]["env"].get("PARLEY_TLS_CERT") else "http"
        return f"{scheme}://{self.nodes[i]['address']}:{self.nodes[i]['http']}{path}"

    def ws(self, i, port=None):
        scheme = "wss" if self.nodes[i]["env"].get("PARLEY_TLS_CERT") else "ws"
        return f"{scheme}://{self.nodes[i]['address']}:{port or self.nodes[i]['http']}/ws"

    def ops(self, i, path=""):
        """The node's operator listener (PARLEY_OPS_LISTEN, SPEC A4)."""
        return f"http://{self.nodes[i]['address']}:{self.nodes[i]['ops']}{path}"

    def tail(self, lines=15):
        out = []
        for node in self.nodes:
            text = open(node["log"], errors="replace").read().splitlines()[-lines:] if os.path.exists(node["log"]) else []
            out.append(f"--- {node['name']} ({node['log']}):\n  " + "\n  ".join(text))
        return "\n".join(out)


def node_processes_run_as(user, deployment):
    """Each node's process (ip netns exec → sh → setpriv → env → parley, all by exec) is parley, run by the user."""
    def who(pid):
        status = open(f"/proc/{pid}/status").read()
        return int(re.search(r"^Uid:\s+(\d+)", status, re.M).group(1)), os.readlink(f"/proc/{pid}/exe")
    for i, proc in deployment.procs.items():
        wait_for(f"{deployment.nodes[i]['name']} to exec parley", 10,
                 lambda: True if who(proc.pid)[1].endswith("/parley") else who(proc.pid))
        uid, exe = who(proc.pid)
        check(uid == user.pw_uid, f"{deployment.nodes[i]['name']} runs as uid {uid} ({exe}), not as {user.pw_name}")
        # The allocator the image preloads (LD_PRELOAD in its ENV) is the one the node runs with.
        preload = image_env()[0].get("LD_PRELOAD")
        if preload:
            maps = open(f"/proc/{proc.pid}/maps").read()
            check(preload in maps, f"{deployment.nodes[i]['name']} did not load {preload} (LD_PRELOAD of the image)")


SCALED_TO = 5  # docs/operations.md: compose's `five` profile, `kubectl scale … --replicas=5`


def run_cluster(layout, parley, user, work):
    app_key, app_secret = "deploytest", secrets.token_hex(16)
    outside = {"PARLEY_SECRET": secrets.token_hex(32), "PARLEY_APPS": f"{app_key}:{app_secret}"}
    CLIENT_TLS.update(ca=None, name=None, by_address={})
    nodes = compose_nodes(outside, user, work) if layout == "compose" else k8s_nodes(outside, user, work)
    check(len(nodes) == SCALED_TO and sum(not n["joins"] for n in nodes) == 3,
          f"{layout}: expected 3 founding nodes and {SCALED_TO - 3} that join, found {[(n['name'], n['joins']) for n in nodes]}")
    deployment = Deployment(parley, user, layout, nodes, work)
    hosts = [(n["ns"], n["address"], [n["hostname"]] + ([n["name"]] if n["name"] != n["hostname"] else []))
             for n in nodes]
    LAB.make(hosts + [(CLIENT_NS, f"{SUBNET}.100", ["pdep-client"])])
    home = os.open("/proc/self/ns/net", os.O_RDONLY)
    try:
        for i in range(3):
            deployment.start(i)
        enter_namespace(CLIENT_NS)
        try:
            node_processes_run_as(user, deployment)
            asyncio.run(smoke_and_kill(deployment, app_key, app_secret))
            asyncio.run(scale_out_and_in(deployment, app_key, app_secret))
        except BaseException:
            log("node logs:\n" + deployment.tail())
            raise
        finally:
            leave_namespace(home)
            deployment.stop_all()
    finally:
        os.close(home)
        LAB.clean()
    for node in nodes:
        files = {p: os.stat(os.path.join(node["data"], p)) for p in os.listdir(node["data"])}
        files.pop("node-id", None)  # the pod's start command writes it (k8s), as the user, 0644
        check(files and all(st.st_uid == user.pw_uid for st in files.values()),
              f"{node['name']}: files in the data folder not owned by {user.pw_name}: {sorted(files)}")
        loose = {p: oct(st.st_mode & 0o777) for p, st in files.items() if st.st_mode & 0o077}
        check(not loose, f"{node['name']}: data files readable by others: {loose}")
    log(f"{layout}: passed")


def peer_port_refuses_strangers(address, port):
    """A cleartext HTTP/2 client (the preface) gets no SETTINGS frame, and a TLS client without a certificate
    is refused in the handshake or at its first read."""
    import socket
    import ssl
    preface = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + bytes([0, 0, 0, 4, 0, 0, 0, 0, 0])
    with socket.create_connection((address, port), timeout=5) as s:
        s.sendall(preface)
        try:
            reply = s.recv(64)
        except OSError:
            reply = b""
        check(not (len(reply) >= 4 and reply[3] == 4), f"the peer port answered cleartext h2: {reply!r}")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.set_alpn_protocols(["h2"])
    refused = False
    with socket.create_connection((address, port), timeout=5) as s:
        try:
            with context.wrap_socket(s) as t:
                t.sendall(preface)
                refused = t.recv(64) == b""
        except (ssl.SSLError, OSError):
            refused = True
    check(refused, "the peer port served a TLS client without a certificate")
    log(f"the peer port {address}:{port} refuses cleartext h2 and TLS without a client certificate")


async def smoke_and_kill(d, app_key, app_secret):
    def all_ready():
        answers = [http(d.url(i, "/readyz")) for i in range(3)]
        return True if all(s == 200 for s, _ in answers) else answers
    wait_for("every node to be ready (/readyz)", 90, all_ready)
    status = json.loads(http(d.ops(0, "/status"))[1])
    # A4: the deployment serves operator pages on their own listener and none on the client port.
    if d.nodes[0]["ops"] != d.nodes[0]["http"]:
        for path in ("/status", "/metrics", "/dashboard", "/status/cluster"):
            check(http(d.url(0, path))[0] == 404, f"the client port serves {path}")
            check(http(d.ops(0, path))[0] == 200, f"the operator port does not serve {path}")
    check(all(p["connected"] for p in status["peers"]) and len(status["peers"]) == 2, f"peers: {status['peers']}")
    # A3: the deployment's peer port speaks mutual TLS, and says so; cleartext h2 and TLS without a client
    # certificate get nothing.
    check(status.get("peerEncrypted") is True, f"{d.layout}: /status says the peer port is not encrypted")
    # T1: the client port speaks TLS (HTTPS, WSS) and says so; plain HTTP to it gets no answer.
    check(status.get("clientEncrypted") is True and d.url(0).startswith("https:"),
          f"{d.layout}: the client port does not serve TLS (clientEncrypted {status.get('clientEncrypted')})")
    plain = signed_api.http(d.url(0, "/healthz").replace("https:", "http:"))
    check(plain[0] == 0, f"{d.layout}: plain HTTP to the TLS client port answered {plain}")
    peer_port_refuses_strangers(d.nodes[0]["address"], int(d.nodes[0]["env"]["PARLEY_PEER_LISTEN"].rsplit(":", 1)[1]))
    check(status["meta"] and len(status["meta"]["nodes"]) == 3, f"meta registry: {status['meta']}")
    log(f"{d.layout}: formed; shards led by node 1: {sum(s['role'] == 'leader' for s in status['shards'])}")

    # The room smoke test: a room through the signed API, two clients on two nodes.
    api = d.url(0)
    for account in ("alice", "bob"):
        code, answer = signed(api, app_key, app_secret, "/v1/user/create",
                              {"accid": account, "name": account.title(), "token": f"{account}-token"})
        check(code == 200 and answer.get("code") == 200, f"user/create {account}: {code} {answer}")
    room = "deployed-room"
    code, answer = signed(api, app_key, app_secret, "/v1/room/create", {"roomId": room, "creator": "alice", "name": "D"})
    check(code == 200 and answer.get("code") == 200, f"room/create: {code} {answer}")
    ws = [d.ws(i) for i in range(3)]
    a = await enter(ws[0], app_key, room, "alice", "alice-token")
    b = await enter(ws[1], app_key, room, "bob", "bob-token")
    await exchange(a, b, room, "before")
    log(f"{d.layout}: room smoke test passed (alice on {d.nodes[0]['name']}, bob on {d.nodes[1]['name']})")

    # E6: the room address lookup names addresses clients can use, never a listen-on-everything address:
    # compose's PARLEY_ADVERTISE (the published host ports); the pods' DNS names with the client port.
    code, answer = signed(api, app_key, app_secret, "/v1/room/requestAddr", {"roomId": room, "accid": "alice"})
    check(code == 200 and answer.get("code") == 200, f"requestAddr: {code} {answer}")
    addresses = answer.get("addr") or answer.get("data", {}).get("addr") or []
    check(addresses and not any(a.startswith(("0.0.0.0", "[::]", "::")) for a in addresses), f"requestAddr: {answer}")
    if d.layout == "compose":
        advertised = {n["env"]["PARLEY_ADVERTISE"] for n in d.nodes[:3]}
        check(set(addresses) <= advertised, f"requestAddr answered {addresses}, not the advertised {sorted(advertised)}")
    else:
        check(all(re.fullmatch(r"parley-\d\.parley-peers:%d" % d.nodes[0]["http"], a) for a in addresses),
              f"requestAddr answered {addresses}")
        # A client connects to the address it was given and enters (the name resolved as the pods' DNS would:
        # this process joined the client namespace by setns, which does not see the namespace's hosts file).
        host, port = addresses[0].rsplit(":", 1)
        node = next(n for n in d.nodes if n["hostname"] == host)
        c = await enter(d.ws(d.nodes.index(node), port), app_key, room, "alice", "alice-token")
        await c.ws.close()
    log(f"{d.layout}: requestAddr names {addresses}")

    # kill -9 the third node: the clients on the other two keep talking; the API keeps answering.
    placement = json.loads(http(d.ops(0, f"/placement/rooms/{room}?app={app_key}"))[1])
    d.kill9(2)
    log(f"{d.layout}: killed {d.nodes[2]['name']} (the room's shard was led by node {placement['leader']})")
    await exchange(a, b, room, "after kill")
    code, answer = signed(d.url(1), app_key, app_secret, "/v1/room/get", {"roomId": room})
    check(code == 200 and answer.get("code") == 200, f"room/get after the kill: {code} {answer}")
    wait_for("node 1 to report the killed node's link down with an error", 20,
             lambda: True if any(p.get("lastError") for p in json.loads(http(d.ops(0, "/status"))[1])["peers"]
                                 if not p["connected"]) else json.loads(http(d.ops(0, "/status"))[1])["peers"])

    # It comes back with its data and catches up: ready, linked, and holding the messages sent without it.
    d.start(2)
    wait_for("the restarted node to be ready", 90, lambda: True if http(d.url(2, "/readyz"))[0] == 200 else http(d.url(2, "/readyz")))
    wait_for("the restarted node to reach both peers", 30,
             lambda: True if all(p["connected"] for p in json.loads(http(d.ops(2, "/status"))[1])["peers"]) else False)
    c = await enter(ws[2], app_key, room, "bob", "bob-token")
    await send_until_ok(c, room, "after restart")
    await a.message("after restart")

    def caught_up():
        shard = placement["shard"]
        views = [json.loads(http(d.ops(i, "/status"))[1]) for i in range(3)]
        rows = [next(s for s in v["shards"] if s["shard"] == shard) for v in views]
        commit = max(r["commit"] for r in rows)
        return True if all(r["applied"] == commit for r in rows) else rows
    wait_for("every replica of the room's shard, the restarted one too, to apply the same entries", 30, caught_up)
    for client in (a, b, c):
        await client.ws.close()
    log(f"{d.layout}: survived kill -9 of {d.nodes[2]['name']} and its restart")


async def scale_out_and_in(d, app_key, app_secret):
    """Issue 18: 3 → 5 nodes as the deployment files scale (compose's `five` profile, the StatefulSet's
    pods 3 and 4): the new nodes join through a founder, take replicas and serve clients; then back to 4 as
    docs/operations.md says: `parley cluster remove --node N --wait …` run inside a founder's container (its
    replicas move off it and it ends dropped), then the container stops (SIGTERM), and the rest keeps serving."""
    joiners = [i for i, n in enumerate(d.nodes) if n["joins"]]
    for i in joiners:
        d.start(i)
    node_processes_run_as(d.user, d)
    wait_for("the joined nodes to be ready (/readyz: replicas that caught up)", 240,
             lambda: True if all(http(d.url(i, "/readyz"))[0] == 200 for i in joiners)
             else [http(d.url(i, "/readyz")) for i in joiners])
    ids = {i: json.loads(http(d.ops(i, "/status"))[1])["node"] for i in range(len(d.nodes))}

    def registry():
        return {n["id"]: n["state"] for n in json.loads(http(d.ops(0, "/status"))[1])["meta"]["nodes"]}
    wait_for("five active nodes in the registry", 30,
             lambda: True if sorted(k for k, v in registry().items() if v == "active") == sorted(ids.values()) else registry())
    held = {ids[i]: len(json.loads(http(d.ops(i, "/status"))[1])["shards"]) for i in joiners}
    check(all(held.values()), f"{d.layout}: the joined nodes hold no replica: {held}")
    # Every node names the joined ones by the address the deployment gives them, not 0.0.0.0.
    def linked():
        peers = {p["id"]: p for p in json.loads(http(d.ops(0, "/status"))[1])["peers"]}
        return True if all(peers.get(ids[i], {}).get("connected") for i in joiners) else peers
    wait_for("node 1 to link to the joined nodes", 30, linked)
    log(f"{d.layout}: scaled out to 5 (replicas held by the joined nodes: {held})")

    room = "scaled-room"
    code, answer = signed(d.url(0), app_key, app_secret, "/v1/room/create", {"roomId": room, "creator": "alice", "name": "S"})
    check(code == 200 and answer.get("code") == 200, f"room/create: {code} {answer}")
    ws = d.ws
    a = await enter(ws(joiners[0]), app_key, room, "alice", "alice-token")
    b = await enter(ws(1), app_key, room, "bob", "bob-token")
    await exchange(a, b, room, "five")

    # Scale in by one: removed from inside a founder's container, waiting until nothing is left on it.
    leaving = joiners[-1]
    peer_port = d.nodes[0]["env"]["PARLEY_PEER_LISTEN"].rsplit(":", 1)[1]
    status, output = d.exec(0, ["cluster", "remove", "--node", str(ids[leaving]), "--wait", "180",
                                "--through", f"127.0.0.1:{peer_port}"], seconds=200)
    check(status == 0 and "is dropped" in output, f"{d.layout}: cluster remove --wait: {status} {output}")
    check(json.loads(http(d.ops(leaving, "/status"))[1])["shards"] == [], f"{d.layout}: the removed node still holds replicas")
    d.stop(leaving)
    check(registry().get(ids[leaving]) == "dropped", f"{d.layout}: registry after the scale-in: {registry()}")
    await exchange(a, b, room, "four")
    for client in (a, b):
        await client.ws.close()
    log(f"{d.layout}: scaled in to 4 ({d.nodes[leaving]['name']} removed, dropped and stopped); the room kept working")


# -------------------------------------------------------------------------------------------- parley dev

def run_dev(parley, user, work):
    """The README's quick start as the non-root user: `parley dev`, then the signed calls and a client."""
    folder = os.path.join(work, "dev")
    os.makedirs(folder, mode=0o755)
    os.chown(folder, user.pw_uid, user.pw_gid)
    base = 18101  # off the README's 8101 so a developer's own `parley dev` does not collide
    log_path = os.path.join(work, "dev.log")
    proc = subprocess.Popen(
        ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--init-groups", "--reset-env",
         parley, "dev", "--data", os.path.join(folder, ".parley-dev"), "--http-port", str(base),
         "--peer-port", str(base - 1000)],
        cwd=folder, stdout=open(log_path, "ab"), stderr=subprocess.STDOUT, start_new_session=True)
    try:
        wait_for("parley dev's three nodes to be ready", 120,
                 lambda: True if all(http(f"http://127.0.0.1:{base + i}/readyz")[0] == 200 for i in range(3)) else
                 [http(f"http://127.0.0.1:{base + i}/readyz") for i in range(3)])
        secret_file = os.path.join(folder, ".parley-dev", "dev-app-secret")
        check(os.stat(secret_file).st_uid == user.pw_uid, "the dev app secret belongs to the user")
        app_secret = open(secret_file).read().strip()
        api = f"http://127.0.0.1:{base}"
        for path, fields in (("/v1/user/create", {"accid": "alice", "name": "Alice", "token": "alice-token"}),
                             ("/v1/room/create", {"roomId": "lobby", "creator": "alice", "name": "Lobby"}),
                             ("/v1/room/requestAddr", {"roomId": "lobby", "accid": "alice"})):
            code, answer = signed(api, "dev", app_secret, path, fields)
            check(code == 200 and answer.get("code") == 200, f"quick start {path}: {code} {answer}")

        async def client():
            c = await enter(f"ws://127.0.0.1:{base}/ws", "dev", "lobby", "alice", "alice-token")
            await send_until_ok(c, "lobby", "hello")
            await c.message("hello")
            await c.ws.close()
        asyncio.run(client())
        log("dev: the README quick start passed as", user.pw_name)
    except BaseException:
        log("parley dev log:\n  " + "\n  ".join(open(log_path, errors="replace").read().splitlines()[-30:]))
        raise
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)


# ------------------------------------------------------------------------------------------------- main

def ensure_user():
    name, uid = image_user()
    try:
        return pwd.getpwnam(name)
    except KeyError:
        pass
    try:
        existing = pwd.getpwuid(uid)
        raise Failure(f"uid {uid} belongs to {existing.pw_name}, not {name}: cannot make the image's user")
    except KeyError:
        pass
    sh("useradd", "--system", "--uid", str(uid), "--no-create-home", "--shell", "/usr/sbin/nologin", name)
    log(f"created the image's user {name} (uid {uid})")
    return pwd.getpwnam(name)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--parley", default=os.path.join(ROOT, ".build/debug/parley"))
    parser.add_argument("--layout", default="all", choices=["compose", "k8s", "dev", "all"])
    args = parser.parse_args()
    if os.geteuid() != 0:
        print("cluster/deployed/run.py needs root (network namespaces, a user switch)", file=sys.stderr)
        return 2
    check(os.access(args.parley, os.X_OK), f"{args.parley} is not built (swift build)")
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(Failure("the whole run took over 15 minutes")))
    signal.alarm(15 * 60)
    user = ensure_user()
    work = tempfile.mkdtemp(prefix="parley-deployed-")
    os.chmod(work, 0o755)
    # The binary where the image puts it, readable by the user (the build folder may not be).
    binary = os.path.join(work, "bin", "parley")
    os.makedirs(os.path.dirname(binary))
    shutil.copy2(args.parley, binary)
    os.chmod(binary, 0o755)
    LAB.clean()
    layouts = ["compose", "k8s", "dev"] if args.layout == "all" else [args.layout]
    passed, failed = 0, 0
    try:
        for layout in layouts:
            started = time.time()
            try:
                if layout == "dev":
                    run_dev(binary, user, work)
                else:
                    folder = os.path.join(work, layout)
                    os.makedirs(folder, mode=0o755)
                    run_cluster(layout, binary, user, folder)
                passed += 1
                log(f"{layout}: ok in {time.time() - started:.1f} s")
            except Failure as e:
                failed += 1
                log(f"{layout}: FAILED: {e}")
    finally:
        LAB.clean()
        for path in MADE_MOUNT_POINTS:  # made as mount points by the nodes' shells; empty on the host
            try:
                os.rmdir(path)
            except OSError:
                pass
        if failed == 0:
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f"kept {work} for a look")
    print(f"deployed: {passed} passed, {failed} failed")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
