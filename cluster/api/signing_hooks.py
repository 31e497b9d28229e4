"""Schemathesis hooks: sign every generated request NIM-style (docs/api.md), with a fresh Nonce each time.

The generated AppKey / Nonce / CurTime / CheckSum values are replaced, so every case reaches the endpoint
itself; the signature refusals are covered by the Swift tests (ServerAPITests).
"""
import hashlib
import os
import time
import uuid

import schemathesis

APP_KEY = os.environ["PARLEY_API_KEY"]
APP_SECRET = os.environ["PARLEY_API_SECRET"]


@schemathesis.hook
def before_call(context, case, **kwargs):
    nonce = uuid.uuid4().hex
    cur_time = str(int(time.time()))
    check_sum = hashlib.sha1((APP_SECRET + nonce + cur_time).encode()).hexdigest()
    headers = dict(case.headers or {})
    # A generated CheckSum2 (an optional header in docs/openapi.yaml) would be wrong and refuse the request
    # (a request carrying both signatures must have both right): sign with NIM's CheckSum alone.
    headers.pop("CheckSum2", None)
    headers.update({"AppKey": APP_KEY, "Nonce": nonce, "CurTime": cur_time, "CheckSum": check_sum})
    case.headers = headers
