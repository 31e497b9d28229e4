#!/usr/bin/env python3
"""A Parley client written from docs/protocol.md alone, with the `websockets` library.

usage: ws_client_test.py WS_URL APP_KEY ROOM_ID ACCOUNT_A TOKEN_A ACCOUNT_B TOKEN_B [WS_URL_B]

WS_URL_B (default WS_URL) is where B connects: another node's edge, so B's message reaches A across edges.

Two connections: hello, enter (independent mode) in ROOM_ID, B sends a message that A receives as an event
with a seq, A pings, a malformed frame gets 4000, an anonymous session cannot send (13102), a bad token
gets 4010 and close code 4401. Exits 0 when every check holds, 1 otherwise (with the reason on stderr).
"""
import asyncio
import sys

import websockets

from protocol_client import Client, Failure, check


async def main(url, app, room, account_a, token_a, account_b, token_b, url_b=None):
    a = await Client.open(url)
    b = await Client.open(url_b or url)
    for c in (a, b):
        hello = await c.call("hello", versions=[1], client="interop-python/1")
        check(hello["ok"] is True and hello["data"]["version"] == 1, f"hello: {hello}")
        check(isinstance(hello["data"]["heartbeatMs"], int), "hello heartbeatMs")

    def auth(account, token):
        return {"mode": "independent", "appKey": app, "account": account, "token": token}

    entered = await a.call("enter", roomId=room, auth=auth(account_a, token_a), nickname="A")
    check(entered["ok"] is True, f"enter A: {entered}")
    check(entered["data"]["room"]["roomId"] == room, "enter answer names the room")
    check(entered["data"]["account"] == account_a, "enter answer names the account")
    check(entered["data"]["resumed"] is False, "no resume asked")
    entered = await b.call("enter", roomId=room, auth=auth(account_b, token_b), nickname="B")
    check(entered["ok"] is True, f"enter B: {entered}")

    sent = await b.call("sendMessage", roomId=room, type="text", body="hello from python", clientMessageId="py-1")
    check(sent["ok"] is True and sent["data"]["seq"] > 0, f"send: {sent}")
    message = await a.event("message", lambda e: e["data"]["clientMessageId"] == "py-1")
    check(message["roomId"] == room and message["seq"] == sent["data"]["seq"], f"message event: {message}")
    check(message["data"]["body"] == "hello from python" and message["data"]["from"] == account_b, "message data")

    history = await a.call("fetchHistory", roomId=room, limit=10)
    check(history["ok"] is True, f"history: {history}")
    check(any(item["kind"] == "message" and item["body"] == "hello from python"
              for item in history["data"]["messages"]), "history holds the message")

    ping = await a.call("ping")
    check(ping["ok"] is True and ping["data"]["time"] > 0, f"ping: {ping}")

    await a.ws.send("{not json")
    malformed = await a.answer(0)
    check(malformed["ok"] is False and malformed["error"]["code"] == 4000, f"malformed: {malformed}")
    unknown = await a.call("teleport", roomId=room)
    check(unknown["error"]["code"] == 4004, f"unknown op: {unknown}")

    anon = await Client.open(url)
    await anon.call("hello", versions=[1])
    entered = await anon.call("enter", roomId=room, auth={"mode": "anonymous", "appKey": app},
                              nickname="Guest", avatar="https://example.com/a.png")
    check(entered["ok"] is True and entered["data"]["account"].startswith("anon-"), f"anonymous: {entered}")
    refused = await anon.call("sendMessage", roomId=room, body="may I?")
    check(refused["ok"] is False and refused["error"]["code"] == 13102, f"anonymous send: {refused}")
    await anon.ws.close()

    bad = await Client.open(url)
    await bad.call("hello", versions=[1])
    answer = await bad.call("enter", roomId=room, auth=auth(account_a, "wrong-token"))
    check(answer["ok"] is False and answer["error"]["code"] == 4010, f"bad token: {answer}")
    try:
        await asyncio.wait_for(bad.ws.recv(), 5)
        raise Failure("bad token: the connection stayed open")
    except websockets.ConnectionClosed as closed:
        check(closed.rcvd is not None and closed.rcvd.code == 4401, f"bad token close code: {closed.rcvd}")

    left = await b.call("exit", roomId=room)
    check(left["ok"] is True, f"exit: {left}")
    await a.event("notification", lambda e: e["data"]["type"] == 302)
    await a.ws.close()
    await b.ws.close()


if __name__ == "__main__":
    if len(sys.argv) not in (8, 9):
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        asyncio.run(main(*sys.argv[1:]))
    except (Failure, asyncio.TimeoutError, websockets.WebSocketException, KeyError) as e:
        print(f"interop check failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    print("interop ok")
