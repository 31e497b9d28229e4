#!/usr/bin/env python3
"""An IM client written from docs/protocol.md ("IM", "Teams") alone, with the `websockets` library.

usage: im_client_test.py APP_KEY ACCOUNT_A TOKEN_A ACCOUNT_B TOKEN_B ACCOUNT_C TOKEN_C WS_URL_A WS_URL_B WS_URL_C

Three users on three edges: A asks B to be friends and B accepts (B's devices get the FriendAdd request,
both get friendChanged, A gets the FriendAdd verify); B blocks C and C's message is refused with 14201 and
never reaches B; A sends three messages that B receives in order, and a second device of B that logs in
later syncs them in order; A makes a team B joins at once, B hears the Invite notification (live or from the
team's log), a team message reaches B with an alert, and after B's team do-not-disturb only the alert flag
changes. Then every team operation once, on a second team (invite, update of every field, managers, mute,
an application approved, a kick, an invitation accepted, a leave, an owner transfer, a dismissal): each
notification is decoded with the tables below — written from docs/protocol.md ("Teams": TeamItem, "IM":
ImItem) and nothing else — and must decode completely (issue 38: a client written from the docs reads
everything it receives). Exits 0 when every check holds, 1 otherwise (with the reason on stderr).
"""
import asyncio
import sys

import websockets

from protocol_client import Client, Failure, check


class ImClient(Client):
    @classmethod
    async def open(cls, url):
        c = await super().open(url)
        hello = await c.call("hello", versions=[1], client="interop-python-im/1")
        check(hello["ok"] is True, f"hello: {hello}")
        return c

    async def quiet(self, name, match, wait=0.5):
        """True when no such event arrives within `wait` seconds."""
        try:
            await self.event(name, match, timeout=wait)
            return False
        except asyncio.TimeoutError:
            return True

    async def login(self, app, account, token):
        # 5030 while the cluster's nodes have not all said they read IM yet (just started): try again.
        for _ in range(50):
            answer = await self.call("imLogin", auth={"mode": "im", "appKey": app, "account": account, "token": token})
            if answer["ok"] or answer["error"]["code"] != 5030:
                break
            await asyncio.sleep(0.2)
        check(answer["ok"] is True and answer["data"]["account"] == account, f"imLogin {account}: {answer}")
        return answer["data"]["nextSeq"]


# docs/protocol.md, TeamItem: NIMTeamOperationType, the attachment's NIMTeamUpdateTag keys, the modes' numbers.
OPERATIONS = {0: "Invite", 1: "Kick", 2: "Leave", 3: "Update", 4: "Dismiss", 5: "ApplyPass", 6: "TransferOwner",
              7: "AddManager", 8: "RemoveManager", 9: "AcceptInvitation", 10: "Mute"}
UPDATE_TAGS = {"3": "name", "14": "intro", "15": "announcement", "16": "joinMode", "19": "avatar", "20": "inviteMode",
               "21": "beInviteMode", "22": "updateInfoMode", "100": "muteMode", "101": "mute"}
ON_OFF = {"1": True, "0": False}
MODE_VALUES = {"joinMode": {"0": "noAuth", "1": "needAuth", "2": "rejectAll"},
               "inviteMode": {"0": "manager", "1": "all"}, "updateInfoMode": {"0": "manager", "1": "all"},
               "beInviteMode": {"0": "needAuth", "1": "noAuth"}, "muteMode": ON_OFF, "mute": ON_OFF}
# docs/protocol.md, ImItem: a teamNotice's operation.
TEAM_NOTICES = {0: "apply", 1: "application rejected", 2: "invite", 3: "invitation rejected"}


def decode_notification(entry):
    """A TeamItem notification as (operation name, {field name: value}); fails on anything the docs do not name."""
    check(set(entry) == {"seq", "time", "kind", "operation", "source", "targets", "notifyExt", "attachment"},
          f"fields of a team notification: {sorted(entry)}")
    check(entry["operation"] in OPERATIONS, f"an operation the docs do not name: {entry}")
    changes = {}
    for key, value in entry["attachment"].items():
        check(key in UPDATE_TAGS and isinstance(value, str), f"an attachment key the docs do not name: {entry}")
        name = UPDATE_TAGS[key]
        if name in MODE_VALUES:
            check(value in MODE_VALUES[name], f"a {name} value the docs do not name: {entry}")
            value = MODE_VALUES[name][value]
        changes[name] = value
    return OPERATIONS[entry["operation"]], changes


def ok(answer, what):
    check(answer["ok"] is True, f"{what}: {answer}")
    return answer.get("data", {})


def item(kind, **fields):
    return lambda e: e.get("kind") == "item" and e["item"]["kind"] == kind and all(e["item"].get(k) == v for k, v in fields.items())


async def main(app, acc_a, tok_a, acc_b, tok_b, acc_c, tok_c, url_a, url_b, url_c):
    a, b, c = await ImClient.open(url_a), await ImClient.open(url_b), await ImClient.open(url_c)
    await a.login(app, acc_a, tok_a)
    await b.login(app, acc_b, tok_b)
    await c.login(app, acc_c, tok_c)
    check((await a.call("relations"))["ok"], "relations")
    refused = await (await ImClient.open(url_a)).call("relations")
    check(refused["error"]["code"] == 4018, f"an IM op before imLogin: {refused}")

    ok(await a.call("friend", target=acc_b, operation="request", message="hi"), "request")
    await b.event("im", item("friendAdd", operation=2, source=acc_a, target=acc_b, msg="hi"))
    ok(await b.call("friend", target=acc_a, operation="verify"), "verify")
    await b.event("im", lambda e: e.get("kind") == "friendChanged" and e["friend"] == acc_a and e["isFriend"] is True)
    await a.event("im", lambda e: e.get("kind") == "friendChanged" and e["friend"] == acc_b and e["isFriend"] is True)
    await a.event("im", item("friendAdd", operation=3, source=acc_b))
    friends = ok(await a.call("relations"), "relations")["relations"]["friends"]
    check([f["account"] for f in friends] == [acc_b], f"friends: {friends}")

    ok(await b.call("setBlocked", target=acc_c, blocked=True), "block")
    blocked = await c.call("sendP2P", to=acc_b, body="let me in", clientMessageId="c-1")
    check(blocked["ok"] is False and blocked["error"]["code"] == 14201, f"blocked send: {blocked}")
    check(await b.quiet("im", item("message", **{"from": acc_c})), "a blocked user's message reached the blocker")

    seqs = []
    for i in range(3):
        seqs.append(ok(await a.call("sendP2P", to=acc_b, body=f"m{i}", clientMessageId=f"a-{i}"), "send")["seq"])
    for i in range(3):
        got = await b.event("im", item("message", body=f"m{i}"))
        check(got["item"]["seq"] == seqs[i] and got["item"]["alert"] is True, f"message {i}: {got}")
    second = await ImClient.open(url_c)
    next_seq = await second.login(app, acc_b, tok_b)
    synced = ok(await second.call("syncIm", afterSeq=0, limit=500), "sync")
    check([i["seq"] for i in synced["items"]] == list(range(1, next_seq)), f"sync in order: {synced}")
    check([i["body"] for i in synced["items"] if i["kind"] == "message"] == ["m0", "m1", "m2"], f"synced messages: {synced}")

    ok(await a.call("teamCreate", teamId="crew", name="Crew", beInviteMode="noAuth"), "teamCreate")
    ok(await a.call("teamInvite", teamId="crew", targets=[acc_b]), "teamInvite")
    joined = await b.event("im", lambda e: e.get("kind") == "teamMembership" and e["teamId"] == "crew")
    check(joined["isMember"] is True and joined["fromSeq"] == 1, f"teamMembership: {joined}")
    team = ok(await b.call("teamQuery", teamId="crew", afterSeq=joined["fromSeq"] - 1, limit=10), "teamQuery")["team"]
    invite = team["items"][0]
    check(invite["kind"] == "notification" and invite["operation"] == 0 and invite["source"] == acc_a
          and invite["targets"] == [acc_b], f"Invite notification: {invite}")
    check(sorted(m["account"] for m in team["members"]) == sorted([acc_a, acc_b]), f"members: {team}")
    sent = ok(await a.call("sendTeamMessage", teamId="crew", body="standup", clientMessageId="t-1"), "team send")
    got = await b.event("team", lambda e: e["item"].get("body") == "standup")
    check(got["alert"] is True and got["item"]["seq"] == sent["seq"], f"team message: {got}")
    ok(await b.call("teamSetNotifyState", teamId="crew", state="none"), "team DND")
    ok(await a.call("sendTeamMessage", teamId="crew", body="later", clientMessageId="t-2"), "team send 2")
    got = await b.event("team", lambda e: e["item"].get("body") == "later")
    check(got["alert"] is False, f"team DND changes only the alert: {got}")
    notice = await c.call("sendTeamMessage", teamId="crew", body="x", type="notification")
    check(notice["error"]["code"] == 414, f"a client's notification: {notice}")

    await every_team_operation(a, b, c, acc_a, acc_b, acc_c)
    for client in (a, b, c, second):
        await client.ws.close()


async def every_team_operation(a, b, c, acc_a, acc_b, acc_c):
    """Each team operation once on team "deck"; B reads the log and decodes every notification from the docs."""
    ok(await a.call("teamCreate", teamId="deck", name="Deck", beInviteMode="noAuth"), "teamCreate deck")
    ok(await a.call("teamInvite", teamId="deck", targets=[acc_b]), "invite")
    ok(await a.call("teamUpdate", teamId="deck", name="Deck 2", intro="about", announcement="news", avatar="d.png",
                    joinMode="needAuth", inviteMode="all", beInviteMode="needAuth", updateInfoMode="all", muteAll=True),
       "update")
    ok(await a.call("teamAddManagers", teamId="deck", accounts=[acc_b]), "add manager")
    ok(await a.call("teamRemoveManagers", teamId="deck", accounts=[acc_b]), "remove manager")
    ok(await a.call("teamMuteMember", teamId="deck", account=acc_b, muted=True), "mute")
    ok(await c.call("teamApply", teamId="deck", message="let me in"), "apply")
    applied = await a.event("im", item("teamNotice", teamId="deck", source=acc_c))
    check(TEAM_NOTICES.get(applied["item"]["operation"]) == "apply" and applied["item"]["msg"] == "let me in",
          f"the application's notice: {applied}")
    ok(await a.call("teamApproveApplication", teamId="deck", applicant=acc_c), "approve")
    ok(await a.call("teamKick", teamId="deck", targets=[acc_c]), "kick")
    ok(await a.call("teamInvite", teamId="deck", targets=[acc_c], postscript="come back"), "invite again")
    invited = await c.event("im", item("teamNotice", teamId="deck", source=acc_a))
    check(TEAM_NOTICES.get(invited["item"]["operation"]) == "invite" and invited["item"]["msg"] == "come back",
          f"the invitation's notice: {invited}")
    ok(await c.call("teamAcceptInvitation", teamId="deck"), "accept")
    ok(await c.call("teamLeave", teamId="deck"), "leave")
    ok(await a.call("teamTransferOwner", teamId="deck", to=acc_b), "transfer")

    items = ok(await b.call("teamQuery", teamId="deck", afterSeq=0, limit=100), "teamQuery deck")["team"]["items"]
    decoded = [decode_notification(i) for i in items if i["kind"] == "notification"]
    want = [("Invite", {}),
            ("Update", {"name": "Deck 2", "intro": "about", "announcement": "news", "avatar": "d.png",
                        "joinMode": "needAuth", "inviteMode": "all", "beInviteMode": "needAuth", "updateInfoMode": "all",
                        "muteMode": True}),
            ("AddManager", {}), ("RemoveManager", {}), ("Mute", {"mute": True}), ("ApplyPass", {}), ("Kick", {}),
            ("AcceptInvitation", {}), ("Leave", {}), ("TransferOwner", {})]
    check(decoded == want, f"the team's notifications, decoded from the docs: {decoded}")
    ok(await b.call("teamDismiss", teamId="deck"), "dismiss")
    dismissed = await a.event("team", lambda e: e["teamId"] == "deck" and e["item"]["kind"] == "notification"
                              and e["item"]["operation"] == 4)
    check(decode_notification(dismissed["item"]) == ("Dismiss", {}), f"dismiss: {dismissed}")


if __name__ == "__main__":
    if len(sys.argv) != 11:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        asyncio.run(main(*sys.argv[1:]))
    except (Failure, asyncio.TimeoutError, websockets.WebSocketException, KeyError, IndexError) as e:
        print(f"im interop check failed: {type(e).__name__}: {e}", file=sys.stderr)
        sys.exit(1)
    print("im interop ok")
