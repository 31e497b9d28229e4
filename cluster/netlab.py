"""Network namespaces for the suites that run real nodes on a network of their own (cluster/deployed,
cluster/chaos): a bridge in a namespace, one namespace per host with a veth on it, an /etc/hosts per
namespace, and moving this process between namespaces. Needs root. Everything a `Lab` makes starts with its
prefix, so `clean()` removes exactly that (also what an earlier, interrupted run left).
"""
import ctypes
import os
import shutil
import signal
import subprocess
import time

CLONE_NEWNET = 0x40000000


class Failure(Exception):
    pass


def check(condition, what):
    if not condition:
        raise Failure(what)


def sh(*argv, check_exit=True):
    done = subprocess.run(argv, capture_output=True, text=True)
    if check_exit and done.returncode != 0:
        raise Failure(f"{' '.join(argv)}: exit {done.returncode}: {done.stderr.strip()[:500]}")
    return done.stdout


def netns(name):
    return ["ip", "netns", "exec", name]


def wait_for(what, deadline_s, probe, interval=0.25):
    deadline = time.time() + deadline_s
    last = None
    while time.time() < deadline:
        last = probe()
        if last is True:
            return
        time.sleep(interval)
    raise Failure(f"timed out waiting for {what} (last: {str(last)[:800]})")


class Lab:
    def __init__(self, prefix):
        self.prefix = prefix
        self.switch = f"{prefix}-sw"

    def clean(self):
        for name in sh("ip", "netns", "list").split("\n"):
            name = name.split(" ")[0]
            if name.startswith(self.prefix + "-"):
                for pid in sh("ip", "netns", "pids", name, check_exit=False).split():
                    try:
                        os.kill(int(pid), signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                sh("ip", "netns", "del", name, check_exit=False)
        for d in (os.listdir("/etc/netns") if os.path.isdir("/etc/netns") else []):
            if d.startswith(self.prefix):
                shutil.rmtree(os.path.join("/etc/netns", d), ignore_errors=True)

    def make(self, hosts):
        """`hosts`: [(namespace, address, names)] on one /24; every namespace gets an /etc/hosts naming
        every host."""
        sh("ip", "netns", "add", self.switch)
        sh(*netns(self.switch), "ip", "link", "add", "br0", "type", "bridge")
        sh(*netns(self.switch), "ip", "link", "set", "br0", "up")
        hosts_file = "127.0.0.1 localhost\n" + "".join(f"{a} {' '.join(n)}\n" for _, a, n in hosts)
        for i, (ns, address, _) in enumerate(hosts):
            sh("ip", "netns", "add", ns)
            port = f"v{i}"
            sh(*netns(self.switch), "ip", "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh(*netns(self.switch), "ip", "link", "set", port, "master", "br0", "up")
            sh(*netns(ns), "ip", "addr", "add", f"{address}/24", "dev", "eth0")
            sh(*netns(ns), "ip", "link", "set", "eth0", "up")
            sh(*netns(ns), "ip", "link", "set", "lo", "up")
            os.makedirs(f"/etc/netns/{ns}", exist_ok=True)
            with open(f"/etc/netns/{ns}/hosts", "w") as f:
                f.write(hosts_file)


def enter_namespace(ns):
    """Moves this process (its calling thread, where everything here runs) into `ns`."""
    libc = ctypes.CDLL(None, use_errno=True)
    fd = os.open(f"/run/netns/{ns}", os.O_RDONLY)
    try:
        if libc.setns(fd, CLONE_NEWNET) != 0:
            raise Failure(f"setns {ns}: errno {ctypes.get_errno()}")
    finally:
        os.close(fd)


def leave_namespace(home_fd):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.setns(home_fd, CLONE_NEWNET) != 0:
        raise Failure(f"setns back: errno {ctypes.get_errno()}")
