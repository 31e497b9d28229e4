#!/usr/bin/env python3
"""A small webhook receiver for an app server (docs/webhooks.md): it checks that every call came from Parley
(CheckSum2 over method, path, Nonce, CurTime and the body, keyed with the app's secret; CurTime within 5
minutes; a Nonce never seen before), answers pre-send moderation calls (SPEC W3) and takes after-event
callbacks (SPEC W2), printing one line per event and dropping a repeat by its id.

    python3 cluster/webhooks/receiver.py --port 9099 --app-key KEY --app-secret SECRET [--path /parley]

Point the app's webhooks at it (`parley dev` allows targets on this machine):

    POST /v1/app/setWebhooks {"url": "http://127.0.0.1:9099/parley", "events": ["room.message", "room.enter"],
                              "preSend": {"rooms": "all"}}

Its verdicts, so a developer (and the tests) can see each kind: a message whose body contains `[reject]` is
rejected (code 451), `[replace]` is allowed with `[replace]` replaced by `[replaced]`; `[slow:N]` answers after
N ms; `[malformed]`, `[huge]` (10 MB), `[redirect]` and `[500]` answer what they say; anything else is allowed.
`GET /calls` lists every call received (with whether its signature verified), as JSON; `GET /events` every
after-event once, in the order first received. `POST /control {"status": 503}` makes after-event calls
answer that status from then on (200 again to recover; a 3xx carries a Location), so a test can stand for an
app server that is down; `"pad": N` adds N bytes to each answer's body.
Runs until stopped.
"""
import argparse
import hashlib
import hmac
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    def __init__(self, app_key, app_secret, path):
        self.app_key, self.app_secret, self.path = app_key, app_secret, path
        self.calls, self.nonces, self.lock = [], set(), threading.Lock()
        self.events, self.event_ids, self.events_status, self.events_pad = [], set(), 200, 0

    def take_events(self, events):
        """Keeps the events not seen before (at-least-once delivery repeats some) and prints them."""
        with self.lock:
            for e in events:
                if e.get("id") in self.event_ids:
                    continue
                self.event_ids.add(e.get("id"))
                self.events.append(e)
                what = e.get("message", {}).get("body") or e.get("reason") or e.get("userId") or ""
                print(f"{e.get('event')} {e.get('roomId')} #{e.get('id')}: {what}", flush=True)

    def verify(self, method, path, headers, body):
        """Why the call is not Parley's (None: it is)."""
        key, nonce, cur, check = (headers.get(h) for h in ("AppKey", "Nonce", "CurTime", "CheckSum2"))
        if key != self.app_key or not nonce or not cur or not check:
            return "missing or foreign signature headers"
        try:
            if abs(time.time() - int(cur)) > 300:
                return "CurTime is more than 5 minutes away"
        except ValueError:
            return "CurTime is not a number"
        text = f"parley-v2\n{method}\n{path}\n{nonce}\n{cur}\n{hashlib.sha256(body).hexdigest()}"
        expected = hmac.new(self.app_secret.encode(), text.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, check):
            return "CheckSum2 does not sign this call"
        with self.lock:
            if nonce in self.nonces:
                return "the Nonce was used before (a replay)"
            self.nonces.add(nonce)
        return None

    @staticmethod
    def verdict(call):
        """(status, headers, body) for a pre-send call."""
        body = call.get("body", "")
        if "[slow:" in body:
            time.sleep(int(body.split("[slow:", 1)[1].split("]", 1)[0]) / 1000)
        if "[reject]" in body:
            return 200, {}, json.dumps({"action": "reject", "code": 451, "reason": "not here"}).encode()
        if "[replace]" in body:
            return 200, {}, json.dumps({"action": "replace", "body": body.replace("[replace]", "[replaced]")}).encode()
        if "[malformed]" in body:
            return 200, {}, b"this is not a verdict"
        if "[huge]" in body:
            return 200, {}, b"{\"action\": \"allow\", \"pad\": \"" + b"x" * (10 << 20) + b"\"}"
        if "[redirect]" in body:
            return 302, {"Location": "http://127.0.0.1:9/elsewhere"}, b""
        if "[500]" in body:
            return 500, {}, b"{}"
        return 200, {}, json.dumps({"action": "allow"}).encode()


def handler_for(receiver):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # The answer's head and body are two writes: with Nagle's algorithm on, the body waits for the head's
        # ACK, which the caller delays up to 40 ms — every verdict would take that long.
        disable_nagle_algorithm = True

        def log_message(self, *args):
            pass

        def answer(self, status, headers, body):
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            for k, v in headers.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self):
            if self.path in ("/calls", "/events"):
                with receiver.lock:
                    body = json.dumps(receiver.calls if self.path == "/calls" else receiver.events).encode()
                return self.answer(200, {}, body)
            self.answer(404, {}, b"{}")

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            path = self.path.split("?", 1)[0]
            if path == "/control":
                control = json.loads(body)
                receiver.events_status = int(control.get("status", 200))
                receiver.events_pad = int(control.get("pad", 0))
                return self.answer(200, {}, b"{}")
            problem = receiver.verify("POST", path, self.headers, body)
            try:
                call = json.loads(body)
            except ValueError:
                call = {"unreadable": body[:200].decode(errors="replace")}
            with receiver.lock:
                receiver.calls.append({"path": path, "verified": problem is None, "problem": problem, "call": call,
                                       "at": time.time()})
            if problem is not None or path != receiver.path:
                return self.answer(401, {}, json.dumps({"error": problem or "unknown path"}).encode())
            if call.get("type") in ("preSend", "preSendIm"):
                return self.answer(*Receiver.verdict(call))
            if call.get("type") == "events":
                pad = b"x" * receiver.events_pad
                if receiver.events_status != 200:
                    moved = {"Location": "http://127.0.0.1:9/elsewhere"} if 300 <= receiver.events_status < 400 else {}
                    return self.answer(receiver.events_status, moved, b"{}" + pad)
                receiver.take_events(call.get("events", []))
                return self.answer(200, {}, b"{}" + pad)
            self.answer(200, {}, b"{}")

    return Handler


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=9099)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--app-key", required=True)
    parser.add_argument("--app-secret", required=True)
    parser.add_argument("--path", default="/parley")
    args = parser.parse_args()
    server = ThreadingHTTPServer((args.host, args.port), handler_for(Receiver(args.app_key, args.app_secret, args.path)))
    server.daemon_threads = True
    print(f"receiving webhooks for {args.app_key} on http://{args.host}:{args.port}{args.path}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
