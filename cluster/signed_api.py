"""HTTP and the signed server API for the bounded suites under cluster/ (deployed/, exposure/): the one place
the scripts sign a request, as docs/api.md ("Signing") says:
CheckSum2 = HMAC-SHA256(AppSecret, "parley-v2\\nPOST\\n" + path + "\\n" + Nonce + "\\n" + CurTime + "\\n" + hex SHA-256(body)).
"""
import hashlib
import hmac
import json
import secrets
import time
import urllib.error
import urllib.request


def http(url, body=None, headers=None, timeout=5, context=None):
    """(status, text); status 0 with the error's text when nothing answered. `context`: the ssl context for an
    https URL (a private CA's, say)."""
    request = urllib.request.Request(url, data=body, headers=headers or {}, method="POST" if body is not None else "GET")
    try:
        with urllib.request.urlopen(request, timeout=timeout, context=context) as answer:
            return answer.status, answer.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()
    except OSError as e:
        return 0, str(e)


def signed_headers(app_key, app_secret, path, body):
    """The headers of a CheckSum2-signed POST of `body` (bytes) to `path`, with a fresh nonce and time."""
    nonce, now = secrets.token_hex(8), str(int(time.time()))
    text = f"parley-v2\nPOST\n{path}\n{nonce}\n{now}\n{hashlib.sha256(body).hexdigest()}"
    return {"AppKey": app_key, "Nonce": nonce, "CurTime": now,
            "CheckSum2": hmac.new(app_secret.encode(), text.encode(), hashlib.sha256).hexdigest(),
            "Content-Type": "application/json"}


def signed(base, app_key, app_secret, path, fields, context=None):
    """(status, answer as a dict) of a signed POST of `fields` to `base + path`."""
    body = json.dumps(fields).encode()
    status, text = http(base + path, body, signed_headers(app_key, app_secret, path, body), context=context)
    return status, (json.loads(text) if text.startswith("{") else {"raw": text})


def lift_budgets(base, app_key, app_secret, seconds=60, messages=1000000):
    """Lifts the app's budgets (A1) to their highest, messages and each connection's requests, retrying while
    the node does not know the app yet (benchmarks measure replication and fan-out, not the abuse limits). A
    build older than peer protocol 6 ignores the connection fields and keeps its fixed connection budget.
    `messages` below 1,000,000 keeps the send budgets checked (never reached, but a client's message then
    takes the road it takes in production: to its shard's leader by a call, not inside Raft)."""
    deadline = time.time() + seconds
    while signed(base, app_key, app_secret, "/v1/app/setBudgets",
                 {"userMessagesPerSecond": messages, "userBurst": messages,
                  "roomMessagesPerSecond": messages, "roomBurst": messages,
                  "connectionRequestsPerSecond": 1000000, "connectionBurst": 1000000})[0] != 200:
        if time.time() > deadline:
            raise RuntimeError("the app's budgets could not be set")
        time.sleep(0.3)
