#!/usr/bin/env python3
"""Issue 35: the fan-out's node CPU per 1,000 deliveries of two builds, measured alike from /proc — the method of
docs/benchmarks.md's fan-out target (sessions 32, 33, 37), for builds whose own benchmark prints no CPU figure.

    cluster/bench/fanout_cpu.py --parley NEW --baseline OLD [--senders 4,1] [--rounds 3] [--members 1000]

Each figure is one `parley bench fanout --members M --runs 1 --senders S` of --messages messages minus one of a
tenth of them (start-up, the members' enters and the idle ticking cancel out), over the deliveries between: the
three `parley node` processes the bench starts (found by their command line: the binary, then `node`) have their
user + system time read from /proc every 0.2 s until they exit. Rounds alternate which build runs first (the
machine's state after one build's run has measured to favour the next). `--no-idle` is passed to a build whose
`bench fanout --help` lists it. Prints every figure and, per sender count, the medians and the ratio NEW / OLD,
with the ratio of each round's pair. Bounded: 2 × rounds × sender counts × 2 bench runs, each its own process.
"""
import argparse
import os
import statistics
import subprocess
import time


def node_cpu_seconds(binary, args):
    """Runs `binary bench fanout args`; returns the bench's node processes' CPU seconds and its output."""
    tick = os.sysconf("SC_CLK_TCK")
    bench = subprocess.Popen([binary, "bench", "fanout", *args], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             text=True)
    cpu = {}
    while bench.poll() is None:
        for pid in os.listdir("/proc"):
            if not pid.isdigit():
                continue
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    command = f.read().split(b"\0")
                if len(command) > 1 and os.path.realpath(command[0].decode()) == binary and command[1] == b"node":
                    with open(f"/proc/{pid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    cpu[pid] = (int(fields[11]) + int(fields[12])) / tick
            except (OSError, IndexError, UnicodeDecodeError):
                pass
        time.sleep(0.2)
    output = bench.stdout.read()
    if bench.returncode != 0:
        raise RuntimeError(f"{binary} bench fanout {' '.join(args)} exited {bench.returncode}:\n{output}")
    if len(cpu) != 3:
        raise RuntimeError(f"expected 3 node processes of {binary}, saw {len(cpu)} (another run overlapping?)")
    return sum(cpu.values()), output


def knows_no_idle(binary):
    help_text = subprocess.run([binary, "bench", "fanout", "--help"], capture_output=True, text=True).stdout
    return "--no-idle" in help_text


def per_thousand(binary, no_idle, members, messages, senders):
    """ms of node CPU per 1,000 deliveries between a run of `messages` and one of a tenth of them."""
    extra = ["--no-idle"] if no_idle else []
    small = max(1, messages // 10)
    common = ["--members", str(members), "--runs", "1", "--senders", str(senders), *extra]
    big_cpu, _ = node_cpu_seconds(binary, common + ["--messages", str(messages)])
    small_cpu, _ = node_cpu_seconds(binary, common + ["--messages", str(small)])
    deliveries = (messages - small) * members
    return (big_cpu - small_cpu) * 1000 / (deliveries / 1000)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--parley", required=True, help="the new build")
    parser.add_argument("--baseline", required=True, help="the build to compare with")
    parser.add_argument("--senders", default="4,1")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--members", type=int, default=1000)
    parser.add_argument("--messages", type=int, default=1500)
    a = parser.parse_args()
    builds = {"new": os.path.realpath(a.parley), "baseline": os.path.realpath(a.baseline)}
    no_idle = {name: knows_no_idle(path) for name, path in builds.items()}
    print(f"| senders | baseline ms CPU / 1,000 deliveries | new | new / baseline (medians) | pair by pair |")
    print("| --- | --- | --- | --- | --- |")
    for senders in [int(s) for s in a.senders.split(",")]:
        figures = {"new": [], "baseline": []}
        for round_ in range(a.rounds):
            order = ["new", "baseline"] if round_ % 2 == 0 else ["baseline", "new"]
            for name in order:
                value = per_thousand(builds[name], no_idle[name], a.members, a.messages, senders)
                figures[name].append(value)
                print(f"# {senders} senders, round {round_ + 1}, {name}: {value:.2f} ms", flush=True)
        new, old = statistics.median(figures["new"]), statistics.median(figures["baseline"])
        pairs = " ".join(f"{n / o:.2f}" for n, o in zip(figures["new"], figures["baseline"]))
        print(f"| {senders} | {' '.join(f'{v:.2f}' for v in figures['baseline'])} (median {old:.2f}) | "
              f"{' '.join(f'{v:.2f}' for v in figures['new'])} (median {new:.2f}) | {new / old:.2f}× | {pairs} |",
              flush=True)


if __name__ == "__main__":
    main()
