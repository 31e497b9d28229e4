#!/usr/bin/env python3
"""Checks docker/compose.yaml and cluster/k8s/*.yaml for the mistakes that break a Parley cluster.

No Docker engine or Kubernetes API is needed: the files are parsed with PyYAML and checked for what the
nodes rely on (every node lists every other node's peer address under the id it runs with, one data volume
per node, the secret from outside the file, health and readiness on the right paths). When the Docker
compose plugin is present, `docker compose config` is run as well. Prints what it checked; exits 1 on the
first problem found.
"""
import os
import re
import subprocess
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def fail(message):
    print("FAIL: " + message)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def parse_peers(text):
    peers = {}
    for item in text.split(","):
        node_id, address = item.split("=", 1)
        peers[int(node_id)] = address.strip()
    return peers


def check_compose():
    path = os.path.join(ROOT, "docker", "compose.yaml")
    with open(path) as f:
        raw = f.read()
    compose = yaml.safe_load(raw)
    services = {k: v for k, v in compose["services"].items() if "PARLEY_ID" in (v.get("environment") or {})}
    founders = {k: v for k, v in services.items() if "PARLEY_JOIN" not in v["environment"]}
    joiners = {k: v for k, v in services.items() if "PARLEY_JOIN" in v["environment"]}
    check(len(founders) == 3, "compose: expected 3 founding node services, found %d" % len(founders))
    check(len(joiners) == 2, "compose: expected 2 node services that join (3 → 5), found %d" % len(joiners))
    named_volumes = set((compose.get("volumes") or {}).keys())
    tls_volume = check_compose_certs(compose, services, named_volumes)
    client_tls_volume = check_compose_client_certs(compose, services, named_volumes)
    ids, peer_lists, host_ports, volumes = {}, [], set(), set()
    for name, service in services.items():
        env = service["environment"]
        node_id = int(env["PARLEY_ID"])
        check(node_id not in ids.values(), "compose: id %d used twice" % node_id)
        ids[name] = node_id
        if name in founders:
            check(not service.get("profiles"), "compose: founder %s must start without a profile" % name)
            peer_lists.append(parse_peers(env["PARLEY_PEERS"]))
        check(env["PARLEY_SECRET"].startswith("${PARLEY_SECRET"), "compose: %s: the secret must come from the environment" % name)
        check(env["PARLEY_LISTEN"].startswith("0.0.0.0:"), "compose: %s must listen on all interfaces" % name)
        check("/healthz" in " ".join(service["healthcheck"]["test"]), "compose: %s: health check must use /healthz" % name)
        for port in service["ports"]:
            parts = str(port).split(":")
            host = ":".join(parts[:-1])  # [address:]host-port
            check(host not in host_ports, "compose: host port %s published twice" % host)
            host_ports.add(host)
            if parts[-1] == env.get("PARLEY_OPS_LISTEN", "").rsplit(":", 1)[-1]:
                check(len(parts) == 3 and parts[0] == "127.0.0.1",
                      "compose: %s: the operator port is published on 127.0.0.1 only (SPEC A4)" % name)
        # Clients are told (E6, C5) the address the node advertises: the host port published for its client port.
        client_port = env["PARLEY_LISTEN"].rsplit(":", 1)[1]
        published = [str(p).split(":") for p in service["ports"] if str(p).split(":")[-1] == client_port]
        check(len(published) == 1, "compose: %s must publish its client port once" % name)
        check(str(env.get("PARLEY_ADVERTISE", "")).endswith(":" + published[0][-2]),
              "compose: %s: PARLEY_ADVERTISE must name the published client port %s" % (name, published[0][-2]))
        mounts = [m for m in service["volumes"] if m.split(":")[0] not in (tls_volume, client_tls_volume)]
        check(len(mounts) == 1, "compose: %s: expected one data volume" % name)
        volume, target = mounts[0].split(":")[:2]
        check(target == env["PARLEY_DATA"], "compose: %s: the volume must be mounted at PARLEY_DATA" % name)
        tls_mount = next((m for m in service["volumes"] if m.split(":")[0] == tls_volume), "")
        check(tls_mount.endswith(":ro"), "compose: %s: the certificates must be mounted read-only" % name)
        tls_dir = tls_mount.split(":")[1]
        for key in ("PARLEY_PEER_TLS_CERT", "PARLEY_PEER_TLS_KEY", "PARLEY_PEER_TLS_CA"):
            check(str(env.get(key, "")).startswith(tls_dir + "/"),
                  "compose: %s: %s must name a file in %s (mutual TLS on the peer port, SPEC A3)" % (name, key, tls_dir))
        check(env["PARLEY_PEER_TLS_KEY"] == "%s/%s.key" % (tls_dir, name),
              "compose: %s: its key must be the one peer-certs makes for it" % name)
        # SPEC T1: the client port serves TLS from the client-certs volume, mounted read-only; the health check
        # then goes to the operator port (plain HTTP).
        client_mount = next((m for m in service["volumes"] if m.split(":")[0] == client_tls_volume), "")
        check(client_mount.endswith(":ro"), "compose: %s: the client-port certificate must be mounted read-only" % name)
        for key in ("PARLEY_TLS_CERT", "PARLEY_TLS_KEY"):
            check(str(env.get(key, "")).startswith(client_mount.split(":")[1] + "/"),
                  "compose: %s: %s must name a file in %s (TLS on the client port, SPEC T1)" % (name, key, client_mount))
        ops_port = env.get("PARLEY_OPS_LISTEN", "").rsplit(":", 1)[-1]
        check(("http://127.0.0.1:%s/healthz" % ops_port) in " ".join(service["healthcheck"]["test"]),
              "compose: %s: the health check must probe the operator port (the client port speaks TLS)" % name)
        check(volume in named_volumes, "compose: %s: volume %s is not a named volume" % (name, volume))
        check(volume not in volumes, "compose: volume %s shared by two nodes" % volume)
        volumes.add(volume)
    check(all(p == peer_lists[0] for p in peer_lists), "compose: the founders' PARLEY_PEERS differ")
    peers = peer_lists[0]
    for name, node_id in ids.items():
        peer_port = services[name]["environment"]["PARLEY_PEER_LISTEN"].rsplit(":", 1)[1]
        if name in founders:
            check(peers.get(node_id) == "%s:%s" % (name, peer_port),
                  "compose: PARLEY_PEERS must list %d=%s:%s, has %r" % (node_id, name, peer_port, peers.get(node_id)))
            continue
        # A node that joins names only itself (the address the others reach it at) and joins through a founder,
        # after that founder is healthy, under a profile so that `up` alone starts the founders.
        env = services[name]["environment"]
        check(parse_peers(env["PARLEY_PEERS"]) == {node_id: "%s:%s" % (name, peer_port)},
              "compose: %s joins: PARLEY_PEERS must be only %d=%s:%s" % (name, node_id, name, peer_port))
        check(env["PARLEY_JOIN"] in peers.values(), "compose: %s must join through a founder's peer address" % name)
        seed = next(n for n, i in ids.items() if peers.get(i) == env["PARLEY_JOIN"])
        check((services[name].get("depends_on") or {}).get(seed, {}).get("condition") == "service_healthy",
              "compose: %s must wait for %s to be healthy" % (name, seed))
        check(services[name].get("profiles"), "compose: %s must sit under a profile (scaled out on demand)" % name)
        check(node_id not in peers, "compose: %s's id %d is a founder's" % (name, node_id))
    check(set(peers) == set(ids[n] for n in founders), "compose: PARLEY_PEERS lists nodes that are not services")
    print("compose: 3 founders, ids %s, identical peers %s; %s join under profile %s; volumes %s: ok"
          % (sorted(ids[n] for n in founders), ",".join("%d=%s" % kv for kv in sorted(peers.items())),
             ",".join(sorted(joiners)), sorted({p for j in joiners.values() for p in j["profiles"]}), sorted(volumes)))


def check_compose_certs(compose, nodes, named_volumes):
    """The one-shot service that makes the peer certificates: runs cluster/certs.sh peer for every node into a
    named volume the nodes mount, and every node waits for it. Returns that volume's name."""
    makers = [(n, s) for n, s in compose["services"].items()
              if (s.get("entrypoint") or [])[:2] == ["/usr/local/bin/parley-certs", "peer"]]
    check(len(makers) == 1, "compose: expected one service running parley-certs peer")
    name, maker = makers[0]
    args = maker["entrypoint"][1:] + (maker.get("command") or [])
    check(sorted(args[2:]) == sorted(nodes), "compose: %s must make a certificate for each node: %s" % (name, args[2:]))
    volume, target = maker["volumes"][0].split(":")[:2]
    check(volume in named_volumes and target == args[1], "compose: %s must write into a named volume" % name)
    for node, service in nodes.items():
        condition = (service.get("depends_on") or {}).get(name, {}).get("condition")
        check(condition == "service_completed_successfully", "compose: %s must wait for %s" % (node, name))
    print("compose: %s makes the peer certificates of %s into volume %s: ok" % (name, ",".join(sorted(nodes)), volume))
    return volume


def check_compose_client_certs(compose, nodes, named_volumes):
    """SPEC T1: the one-shot service that makes the client port's CA and certificate (cluster/certs.sh client)
    into a named volume, for the name clients use; every node waits for it. Returns that volume's name."""
    makers = [(n, s) for n, s in compose["services"].items()
              if (s.get("entrypoint") or [])[:2] == ["/usr/local/bin/parley-certs", "client"]]
    check(len(makers) == 1, "compose: expected one service running parley-certs client")
    name, maker = makers[0]
    args = maker["entrypoint"][1:] + (maker.get("command") or [])
    check(any("PARLEY_PUBLIC_HOST" in a for a in args[2:]), "compose: %s must name PARLEY_PUBLIC_HOST" % name)
    volume, target = maker["volumes"][0].split(":")[:2]
    check(volume in named_volumes and target == args[1], "compose: %s must write into a named volume" % name)
    for node, service in nodes.items():
        condition = (service.get("depends_on") or {}).get(name, {}).get("condition")
        check(condition == "service_completed_successfully", "compose: %s must wait for %s" % (node, name))
    print("compose: %s makes the client port's certificate into volume %s: ok" % (name, volume))
    return volume


def docker_compose_config():
    try:
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        probe = None
    if probe is None or probe.returncode != 0:
        print("docker compose config: skipped (no docker compose plugin on this machine)")
        return
    env = dict(os.environ, PARLEY_SECRET="validation-secret-0123456789")
    result = subprocess.run(["docker", "compose", "-f", os.path.join(ROOT, "docker", "compose.yaml"), "config", "-q"],
                            capture_output=True, text=True, env=env, timeout=60)
    check(result.returncode == 0, "docker compose config: " + result.stderr.strip())
    print("docker compose config: ok")


def check_k8s():
    folder = os.path.join(ROOT, "cluster", "k8s")
    docs = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".yaml"):
            with open(os.path.join(folder, name)) as f:
                docs += [d for d in yaml.safe_load_all(f) if d]
    by_kind = {}
    for d in docs:
        check("apiVersion" in d and "kind" in d and "name" in d.get("metadata", {}), "k8s: a document lacks apiVersion/kind/name")
        by_kind.setdefault(d["kind"], []).append(d)
    for kind in ["StatefulSet", "Service", "ConfigMap", "Secret"]:
        check(kind in by_kind, "k8s: no %s" % kind)
    sts = by_kind["StatefulSet"][0]
    spec = sts["spec"]
    replicas = spec["replicas"]
    check(replicas == 3, "k8s: expected 3 replicas")
    check(spec.get("podManagementPolicy") == "Parallel", "k8s: pods must start in parallel (no node is ready alone)")
    labels = spec["template"]["metadata"]["labels"]
    check(all(labels.get(k) == v for k, v in spec["selector"]["matchLabels"].items()), "k8s: selector does not match the pod labels")
    services = {s["metadata"]["name"]: s for s in by_kind["Service"]}
    headless = services.get(spec["serviceName"])
    check(headless is not None and headless["spec"].get("clusterIP") == "None", "k8s: serviceName must be a headless Service")
    check(headless["spec"].get("publishNotReadyAddresses") is True, "k8s: the headless Service must publish unready pods")
    check(any(s["spec"].get("clusterIP") != "None" for s in services.values()), "k8s: no client Service")
    for s in services.values():
        check(all(s["spec"]["selector"].get(k) == v for k, v in labels.items() if k in s["spec"]["selector"]),
              "k8s: Service %s does not select the pods" % s["metadata"]["name"])
    claims = spec["volumeClaimTemplates"]
    container = spec["template"]["spec"]["containers"][0]
    check(container["readinessProbe"]["httpGet"]["path"] == "/readyz", "k8s: readiness must use /readyz")
    check(container["livenessProbe"]["httpGet"]["path"] == "/healthz", "k8s: liveness must use /healthz")
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    check(claims[0]["metadata"]["name"] in mounts, "k8s: the volume claim is not mounted")
    config_maps = {c["metadata"]["name"]: c for c in by_kind["ConfigMap"]}
    secrets = {c["metadata"]["name"]: c for c in by_kind["Secret"]}
    env = {}
    for source in container["envFrom"]:
        if "configMapRef" in source:
            name = source["configMapRef"]["name"]
            check(name in config_maps, "k8s: ConfigMap %s missing" % name)
            env.update(config_maps[name]["data"])
        if "secretRef" in source:
            name = source["secretRef"]["name"]
            check(name in secrets, "k8s: Secret %s missing" % name)
            env.update(secrets[name]["stringData"])
    check(len(env["PARLEY_SECRET"]) >= 8, "k8s: the secret must be at least 8 bytes")
    check(mounts[claims[0]["metadata"]["name"]] == env["PARLEY_DATA"], "k8s: the claim must be mounted at PARLEY_DATA")
    # Mutual TLS on the peer port (SPEC A3): the three files from a mounted Secret.
    secret_volumes = {v["name"]: v["secret"]["secretName"] for v in spec["template"]["spec"].get("volumes", [])
                      if "secret" in v}
    tls_mounts = {m["mountPath"]: m for m in container["volumeMounts"] if m["name"] in secret_volumes}
    check(len(tls_mounts) == 2 and all(m.get("readOnly") for m in tls_mounts.values()),
          "k8s: expected two read-only Secret mounts (peer TLS, client-port TLS)")
    for key, file in (("PARLEY_PEER_TLS_CERT", "tls.crt"), ("PARLEY_PEER_TLS_KEY", "tls.key"), ("PARLEY_PEER_TLS_CA", "ca.crt"),
                      ("PARLEY_TLS_CERT", "tls.crt"), ("PARLEY_TLS_KEY", "tls.key")):
        folder = os.path.dirname(env.get(key, ""))
        check(folder in tls_mounts and os.path.basename(env[key]) == file,
              "k8s: %s must be a mounted Secret's %s (SPEC A3, T1)" % (key, file))
    check(os.path.dirname(env["PARLEY_TLS_CERT"]) != os.path.dirname(env["PARLEY_PEER_TLS_CERT"]),
          "k8s: the client port's certificate must not be the peer port's (peers trust that CA)")
    # The client port speaks TLS: the kubelet's probes go to the operator port.
    for probe in ("readinessProbe", "livenessProbe"):
        check(container[probe]["httpGet"]["port"] == "ops", "k8s: %s must probe the ops port (the client port speaks TLS)" % probe)
    peers = parse_peers(env["PARLEY_PEERS"])
    peer_port = env["PARLEY_PEER_LISTEN"].rsplit(":", 1)[1]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    check(str(ports["peer"]) == peer_port, "k8s: container peer port differs from PARLEY_PEER_LISTEN")
    check(str(ports["http"]) == env["PARLEY_LISTEN"].rsplit(":", 1)[1], "k8s: container http port differs from PARLEY_LISTEN")
    if "PARLEY_OPS_LISTEN" in env:
        check(str(ports.get("ops")) == env["PARLEY_OPS_LISTEN"].rsplit(":", 1)[1],
              "k8s: container ops port differs from PARLEY_OPS_LISTEN")
    # Run the container's start command with `parley` replaced by echo, as each pod would: the founders
    # (ordinals 0-2) run the ids PARLEY_PEERS lists; the pods of a scale-out to 5 join through parley-0 naming
    # themselves; a restart keeps the id written into the data folder, whatever the offset says then.
    script = " ".join(container["args"])
    check("/usr/local/bin/parley node" in script, "k8s: the start command must run `parley node`")
    import tempfile

    def start(hostname, data, offset="0"):
        run_env = dict({k: str(v) for k, v in env.items()}, HOSTNAME=hostname, PATH="/usr/bin:/bin",
                       PARLEY_DATA=data, PARLEY_JOIN_ID_OFFSET=offset)
        return subprocess.run(["sh", "-c", script.replace("/usr/local/bin/parley", "echo")],
                              capture_output=True, text=True, env=run_env).stdout
    seed = "%s-0.%s:%s" % (sts["metadata"]["name"], spec["serviceName"], peer_port)
    for ordinal in range(5):
        hostname = "%s-%d" % (sts["metadata"]["name"], ordinal)
        with tempfile.TemporaryDirectory() as data:
            out = start(hostname, data)
            match = re.search(r"--id (\d+)", out)
            check(match is not None, "k8s: start command printed %r for %s" % (out, hostname))
            node_id = int(match.group(1))
            check(node_id == ordinal + 1, "k8s: pod %s runs id %d" % (hostname, node_id))
            expected = "%s.%s:%s" % (hostname, spec["serviceName"], peer_port)
            if ordinal < replicas:
                check(peers.get(node_id) == expected and "--join" not in out,
                      "k8s: pod %s runs id %d but PARLEY_PEERS has %r, expected %s" % (hostname, node_id, peers.get(node_id), expected))
            else:
                check("--join %s" % seed in out and "--peers %d=%s" % (node_id, expected) in out,
                      "k8s: pod %s (scale-out) must join through %s naming itself %s: %r" % (hostname, seed, expected, out))
            again = start(hostname, data, offset="100")
            check(re.search(r"--id %d\b" % node_id, again), "k8s: pod %s restarted with another id: %r" % (hostname, again))
        if ordinal >= replicas:
            with tempfile.TemporaryDirectory() as data:
                check(re.search(r"--id %d\b" % (ordinal + 101), start(hostname, data, offset="100")),
                      "k8s: PARLEY_JOIN_ID_OFFSET must shift a new joining pod's id")
    check(len(peers) == replicas, "k8s: PARLEY_PEERS lists %d nodes for %d replicas" % (len(peers), replicas))
    print("k8s: StatefulSet %d replicas (ids %s from the pod ordinal; pods 4-5 of a scale-out join), headless %s, probes /readyz /healthz, claim %s: ok"
          % (replicas, sorted(peers), spec["serviceName"], claims[0]["metadata"]["name"]))
    for tool in ["kubeconform", "kubectl"]:
        found = any(os.access(os.path.join(d, tool), os.X_OK) for d in os.environ.get("PATH", "").split(os.pathsep))
        print("%s: %s" % (tool, "present, but not used (needs schemas or an API server)" if found else "not installed"))


if __name__ == "__main__":
    check_compose()
    docker_compose_config()
    check_k8s()
    print("ALL OK")
