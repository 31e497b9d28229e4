#!/usr/bin/env python3
"""A short load of signed server-API writes against a fresh `parley dev` cluster: the benchmark for changes
to the API's request path (issue 22's request keys). Each run starts the cluster from an empty folder, makes
a room, then sends --requests `/v1/message/send` calls from --concurrency threads over keep-alive
connections, each signed with CheckSum2 and a fresh nonce, spread over the nodes; it prints writes/s and
latency percentiles. Compare two binaries in one sitting, alternating:

    python3 cluster/api/signed_load.py --parley A --parley B --runs 3
"""
import argparse
import hashlib
import hmac
import http.client
import json
import os
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from signed_api import http as plain_http, signed  # noqa: E402


def headers_for(app_key, app_secret, path, body):
    nonce, now = secrets.token_hex(8), str(int(time.time()))
    text = f"parley-v2\nPOST\n{path}\n{nonce}\n{now}\n{hashlib.sha256(body).hexdigest()}"
    return {"AppKey": app_key, "Nonce": nonce, "CurTime": now, "Content-Type": "application/json",
            "CheckSum2": hmac.new(app_secret.encode(), text.encode(), hashlib.sha256).hexdigest()}


def one_run(parley, requests, concurrency, base_port):
    data = tempfile.mkdtemp(prefix="parley-apiload-")
    proc = subprocess.Popen([parley, "dev", "--data", data, "--http-port", str(base_port),
                             "--peer-port", str(base_port + 100), "--shards", "16", "--demo-port", "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        nodes = [f"127.0.0.1:{base_port + i}" for i in range(3)]
        deadline = time.time() + 60
        while time.time() < deadline:
            if all(plain_http(f"http://{n}/readyz", timeout=1)[0] == 200 for n in nodes):
                break
            time.sleep(0.2)
        else:
            raise SystemExit("the dev cluster did not get ready")
        secret = open(os.path.join(data, "dev-app-secret")).read().strip()
        code, answer = 0, {}
        while time.time() < deadline and code != 200:
            code, answer = signed(f"http://{nodes[0]}", "dev", secret, "/v1/room/create",
                                  {"roomId": "load", "creator": "system", "name": "Load"})
            time.sleep(0.1)
        latencies, errors, lock = [], [], threading.Lock()
        per_thread = requests // concurrency

        def worker(t):
            conn = http.client.HTTPConnection(nodes[t % len(nodes)], timeout=10)
            mine = []
            for i in range(per_thread):
                body = json.dumps({"roomId": "load", "type": "text", "body": f"t{t}-{i}"}).encode()
                start = time.perf_counter()
                conn.request("POST", "/v1/message/send", body, headers_for("dev", secret, "/v1/message/send", body))
                reply = conn.getresponse()
                text = reply.read()
                mine.append(time.perf_counter() - start)
                if reply.status != 200:
                    with lock:
                        errors.append(text[:200])
            with lock:
                latencies.extend(mine)

        began = time.perf_counter()
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(concurrency)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - began
        latencies.sort()
        return {"writes_per_s": round(len(latencies) / elapsed, 1),
                "p50_ms": round(1000 * latencies[len(latencies) // 2], 2),
                "p99_ms": round(1000 * latencies[int(len(latencies) * 0.99)], 2), "errors": len(errors)}
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        shutil.rmtree(data, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parley", action="append", required=True, help="a binary (give two to compare)")
    parser.add_argument("--requests", type=int, default=3000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--port", type=int, default=18101)
    args = parser.parse_args()
    results = {p: [] for p in args.parley}
    for run in range(args.runs):
        for p in args.parley:
            r = one_run(p, args.requests, args.concurrency, args.port)
            results[p].append(r)
            print(f"run {run + 1} {p}: {r}", flush=True)
    for p, rs in results.items():
        print(f"median {p}: {statistics.median(r['writes_per_s'] for r in rs)} writes/s, "
              f"p50 {statistics.median(r['p50_ms'] for r in rs)} ms, p99 {statistics.median(r['p99_ms'] for r in rs)} ms, "
              f"errors {sum(r['errors'] for r in rs)}")


if __name__ == "__main__":
    main()
