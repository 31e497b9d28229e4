"""Issue 19 in the chaos suite (cluster/chaos/run.py): one-to-one messages between users on different shards
through the signed server API while the faults run, checked after the heal. A message applies on the
receiver's shard and reaches the sender's log by the effects relay between shard leaders, so the check sees
both halves: every acknowledged message is in the receiver's log once at its acknowledged seq, and — once the
relay caught up — in the sender's log once; nothing refused is stored anywhere."""
import asyncio
import time

from signed_api import signed

SEND_EVERY = 0.2
RETRIES = 3            # a send that got no answer is sent again with the same msgId (the receiver answers a resend once)


class ImWorkload:
    def __init__(self, cluster, app, pairs=2):
        self.cluster, self.app = cluster, app
        self.pairs = [(f"ima{k}", f"imb{k}") for k in range(pairs)]
        self.acked = {}      # (sender, msgId) -> the receiver's seq
        self.refused = {}    # (sender, msgId) -> code
        self.unknown = set()

    def _post(self, node, path, fields, timeout=5):
        return signed(self.cluster.url(node), self.app, self.cluster.app_secret, path, fields)

    async def prepare(self):
        for a, b in self.pairs:
            for name in (a, b):
                status, answer = await asyncio.to_thread(self._post, 1, "/v1/user/create", {"accid": name, "token": f"tok-{name}"})
                if status != 200:
                    raise RuntimeError(f"user/create {name}: {status} {answer}")

    async def _sender(self, k, until):
        a, b = self.pairs[k]
        n = 0
        while time.time() < until:
            msg_id = f"{a}-{n}"
            node = self.cluster.ids[(n + k) % len(self.cluster.ids)]
            for attempt in range(RETRIES):
                status, answer = await asyncio.to_thread(self._post, node, "/v1/msg/sendMsg",
                                                         {"from": a, "to": b, "body": msg_id, "msgId": msg_id})
                code = answer.get("code") if isinstance(answer, dict) else None
                if status == 200:
                    self.acked[(a, msg_id)] = answer["data"]["seq"]
                    self.unknown.discard((a, msg_id))
                    break
                if 400 <= status < 500 and code not in (10406,):
                    self.refused[(a, msg_id)] = code
                    break
                self.unknown.add((a, msg_id))   # no leader, a timeout, a node cut off: it may have applied
                node = self.cluster.ids[(self.cluster.ids.index(node) + 1) % len(self.cluster.ids)]
                await asyncio.sleep(0.3)
            n += 1
            await asyncio.sleep(SEND_EVERY)

    async def run(self, seconds):
        until = time.time() + seconds
        await asyncio.gather(*(self._sender(k, until) for k in range(len(self.pairs))))

    async def _log(self, account):
        """Every item of the account's log, page by page, from the first node that answers all pages."""
        for node in self.cluster.ids:
            items, after, ok = [], 0, True
            while True:
                status, answer = await asyncio.to_thread(self._post, node, "/v1/msg/sync",
                                                         {"accid": account, "afterSeq": after, "limit": 500})
                if status != 200:
                    ok = False
                    break
                page = answer["data"]["items"]
                if not page:
                    break
                items += page
                after = page[-1]["seq"]
            if ok:
                return items
        return None

    async def check(self, seconds=30):
        """Problems and figures, read while the cluster is up (after the heal)."""
        problems, figures = [], {"im_acked": len(self.acked), "im_lost": 0, "im_duplicated": 0, "im_copies_missing": 0}
        deadline = time.time() + seconds
        for a, b in self.pairs:
            mine = {m for (s, m) in self.acked if s == a}
            inbox = await self._log(b)
            if inbox is None:
                problems.append(f"im: no node answered {b}'s log")
                continue
            stored = {}
            for item in inbox:
                if item["kind"] == "message" and item["from"] == a:
                    stored.setdefault(item["msgId"], []).append(item["seq"])
            for msg_id, seqs in stored.items():
                if len(seqs) > 1:
                    figures["im_duplicated"] += 1
                    problems.append(f"im: {a}'s {msg_id} stored {len(seqs)} times in {b}'s log at {seqs}")
            for msg_id in sorted(mine):
                seq = self.acked[(a, msg_id)]
                if msg_id not in stored:
                    figures["im_lost"] += 1
                    problems.append(f"im: acknowledged {msg_id} (seq {seq}) is not in {b}'s log")
                elif stored[msg_id][0] != seq:
                    problems.append(f"im: {msg_id} acknowledged at seq {seq}, stored at {stored[msg_id][0]}")
            for (s, msg_id), code in self.refused.items():
                if s == a and msg_id in stored:
                    problems.append(f"im: {msg_id} was refused ({code}) yet stored")
            # The sender's copies come by the relay: wait for it to catch up after the heal.
            while True:
                outbox = await self._log(a) or []
                copies = {}
                for item in outbox:
                    if item["kind"] == "message" and item["to"] == b:
                        copies.setdefault(item["msgId"], []).append(item["seq"])
                missing = sorted(m for m in stored if m not in copies)
                doubled = {m: s for m, s in copies.items() if len(s) > 1}
                if (not missing and not doubled) or time.time() > deadline:
                    break
                await asyncio.sleep(0.5)
            if missing:
                figures["im_copies_missing"] += len(missing)
                problems.append(f"im: {len(missing)} of {b}'s messages from {a} never reached {a}'s log "
                                f"(the relay), e.g. {missing[:3]}")
            for msg_id, seqs in doubled.items():
                figures["im_duplicated"] += 1
                problems.append(f"im: {a}'s copy of {msg_id} is in its log {len(seqs)} times")
            extra = sorted(m for m in copies if m not in stored)
            if extra:
                problems.append(f"im: {a}'s log holds copies of messages {b}'s does not: {extra[:3]}")
        return problems, figures
