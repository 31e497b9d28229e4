#!/usr/bin/env python3
"""How long a node takes from SIGTERM to exit (issue 34: no fixed sleeps at shutdown).

    cluster/bench/stop_time.py [--parley .build/debug/parley] [--runs 2]

Starts three `parley node` processes on loopback (drain off: `--drain-seconds 0`), waits until they are ready
and 2 s more, then sends SIGTERM to each in turn (node 3, 2, 1) and times its exit. Prints one line per run:
each node's seconds to exit and its exit status. Bounded: a node that does not exit within 60 s fails the run.
"""
import argparse
import os
import shutil
import signal
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "cluster"))
from protocol_session import kill_groups, start_nodes, wait_ready  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--parley", default=os.path.join(ROOT, ".build/debug/parley"))
    parser.add_argument("--runs", type=int, default=2)
    args = parser.parse_args()
    for _ in range(args.runs):
        work = tempfile.mkdtemp(prefix="parley-stop-time-")
        procs = []
        try:
            procs, http_ports, _, _ = start_nodes(args.parley, work, "app", "s" * 32)
            wait_ready(http_ports)
            time.sleep(2)
            out = []
            for p in reversed(procs):
                began = time.time()
                os.killpg(p.pid, signal.SIGTERM)
                status = p.wait(60)
                out.append(f"{time.time() - began:.2f} s (exit {status})")
            print("SIGTERM to exit, nodes 3, 2, 1: " + ", ".join(out), flush=True)
        finally:
            kill_groups(procs)
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
