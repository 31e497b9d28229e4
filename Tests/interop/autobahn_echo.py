#!/usr/bin/env python3
"""Autobahn conformance cases (kosoku, fuzzingclient mode) against Parley's `/ws/echo`.

usage: autobahn_echo.py WS_URL [REPORT_DIR]

The cases send arbitrary frames and expect them echoed, which the chat protocol on `/ws` never does;
`/ws/echo` runs the same HummingbirdWebSocket framing stack and echoes. Compression (12.*, 13.*) is not
offered by Parley and the performance cases (9.*) are left out to keep the run bounded. Exits 1 when a case
ends in anything but OK, NON-STRICT or INFORMATIONAL.
"""
import asyncio
import sys

from kosoku import FailureError, run_fuzzingclient

ACCEPTED = {"OK", "NON-STRICT", "INFORMATIONAL"}


async def main(url):
    try:
        results = await run_fuzzingclient(url, ["*"], ["9.*", "12.*", "13.*"], concurrency=4)
    except FailureError as failure:
        results = failure.results
    bad = []
    for r in results:
        verdicts = {r.behavior.value, r.behavior_close.value}
        if not verdicts <= ACCEPTED:
            bad.append(f"{r.case_id}: {r.behavior.value} / close {r.behavior_close.value}")
    print(f"{len(results)} cases, {len(bad)} not accepted")
    for line in bad:
        print(line, file=sys.stderr)
    return 1 if bad or not results else 0


if __name__ == "__main__":
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    sys.exit(asyncio.run(main(sys.argv[1])))
