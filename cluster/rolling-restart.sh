#!/usr/bin/env bash
# Rolling restart or upgrade of a Parley cluster (issue 18, SPEC C6): one node at a time —
#   drain it (its clients move to other edges, its leaderships to other replicas; it keeps its replicas),
#   stop it, start it (the same binary or a new one), wait until it is ready and caught up,
#   undrain it, and wait until it leads its share of shards again (the health gate) — then the next node.
# It stops at the first node that does not pass a step in time, leaving that node drained (undrain it by hand
# once it is healthy: `parley cluster undrain --node ID`).
#
#   cluster/rolling-restart.sh --through 10.0.0.1:7101 --secret-file /run/secrets/parley \
#       --ops 'http://10.0.0.{id}:8201' \
#       --stop 'ssh node-{id} systemctl stop parley' --start 'ssh node-{id} systemctl start parley' 1 2 3
#
# {id} in --ops, --stop and --start is replaced by the node's id. --ops is where the node's /status and
# /readyz answer (its --ops-listen, else its client port), as a template or as a list `1=URL,2=URL,…`.
# --stop must return once the process has ended.
# Needs curl and python3.
set -euo pipefail

parley=${PARLEY:-parley}
through="" secret_file="" ops="" stop="" start="" timeout=120
ids=()
while [ $# -gt 0 ]; do
    case "$1" in
        --through) through=$2; shift 2 ;;
        --secret-file) secret_file=$2; shift 2 ;;
        --ops) ops=$2; shift 2 ;;
        --stop) stop=$2; shift 2 ;;
        --start) start=$2; shift 2 ;;
        --parley) parley=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
        -*) echo "unknown option $1" >&2; exit 2 ;;
        *) ids+=("$1"); shift ;;
    esac
done
if [ -z "$through" ] || [ -z "$secret_file" ] || [ -z "$ops" ] || [ -z "$stop" ] || [ -z "$start" ] || [ ${#ids[@]} -eq 0 ]; then
    echo "usage: $0 --through HOST:PEERPORT --secret-file FILE --ops URL --stop CMD --start CMD ID..." >&2
    exit 2
fi

log() { echo "[rolling-restart] $(date -u +%H:%M:%S) $*"; }
for_node() { echo "${1//\{id\}/$2}"; }
ops_url() {
    case "$ops" in
        *=*) local entry; for entry in ${ops//,/ }; do [ "${entry%%=*}" = "$1" ] && { echo "${entry#*=}"; return; }; done
             echo "no --ops address for node $1" >&2; exit 2 ;;
        *) for_node "$ops" "$1" ;;
    esac
}

# Reads node $1's /status and prints "yes" when the Python condition $2 holds for it (`s` is the report).
status_says() {
    local body
    body=$(curl -fsS --max-time 3 "$(ops_url "$1")/status" 2>/dev/null) || { echo no; return; }
    python3 -c "import json,sys; s=json.loads(sys.argv[1]); print('yes' if ($2) else 'no')" "$body" 2>/dev/null || echo no
}

# Waits (up to --timeout s) until `status_says $1 $2`, or fails naming $3.
wait_for() {
    local deadline=$((SECONDS + timeout))
    until [ "$(status_says "$1" "$2")" = yes ]; do
        if [ $SECONDS -ge $deadline ]; then log "node $1: $3 not reached in ${timeout}s; stopping here (node $1 stays drained)"; exit 1; fi
        sleep 1
    done
}

for id in "${ids[@]}"; do
    log "node $id: draining"
    "$parley" cluster drain --node "$id" --through "$through" --secret-file "$secret_file"
    wait_for "$id" "(s.get('edge') or {}).get('connections', 0) == 0 and not any(x['role'] == 'leader' for x in s['shards'])" \
        "no client and no shard leader"
    log "node $id: stopping"
    sh -c "$(for_node "$stop" "$id")"
    log "node $id: starting"
    sh -c "$(for_node "$start" "$id")"
    deadline=$((SECONDS + timeout))
    until curl -fsS --max-time 3 -o /dev/null "$(ops_url "$id")/readyz" 2>/dev/null; do
        if [ $SECONDS -ge $deadline ]; then log "node $id: not ready in ${timeout}s; stopping here"; exit 1; fi
        sleep 1
    done
    wait_for "$id" "s['healthy'] and s['shards'] and all(x['applied'] >= x['commit'] for x in s['shards'])" "caught up"
    log "node $id: ready and caught up; undraining"
    "$parley" cluster undrain --node "$id" --through "$through" --secret-file "$secret_file"
    # The health gate: it leads its share again (the balancer gives it back within seconds), at least
    # shards / nodes - 1 of the shards it could lead.
    wait_for "$id" "sum(1 for x in s['shards'] if x['role'] == 'leader') >= s['shardCount'] // max(1, len([n for n in (s.get('meta') or {}).get('nodes', []) if n['state'] == 'active'])) - 1" \
        "its share of shard leaders"
    log "node $id: done"
done
log "all ${#ids[@]} nodes restarted"
