#!/usr/bin/env bash
# A local N-node cluster of `parley node` processes on 127.0.0.1, managed by pid files, for trying
# failures by hand (`parley dev` is the one-command version that stops everything on Ctrl-C).
#
#   cluster/local.sh up [N]          start nodes 1..N (default 3); data in $PARLEY_CLUSTER_DIR (.parley-cluster)
#   cluster/local.sh down            stop every node gracefully (SIGTERM)
#   cluster/local.sh kill ID         kill -9 one node
#   cluster/local.sh stop ID         stop one node gracefully
#   cluster/local.sh start ID        start (or restart) one node with the same settings
#   cluster/local.sh status [ID]     `parley status` of a node (default 1)
#   cluster/local.sh wipe            remove the cluster's data (only when it is down)
#
# Node n listens for HTTP on 127.0.0.1:$((8100 + n)) and for peers on 127.0.0.1:$((7100 + n)).
set -euo pipefail
cd "$(dirname "$0")/.."
DIR=${PARLEY_CLUSTER_DIR:-.parley-cluster}
PARLEY=${PARLEY:-.build/debug/parley}
SHARDS=${PARLEY_SHARDS:-64}

ensure_built() { [ -x "$PARLEY" ] || swift build --product parley; }
count() { cat "$DIR/size" 2>/dev/null || echo 3; }
peers() { local out=""; for i in $(seq 1 "$(count)"); do out+="${out:+,}$i=127.0.0.1:$((7100 + i))"; done; echo "$out"; }
pidfile() { echo "$DIR/node-$1.pid"; }
alive() { [ -f "$(pidfile "$1")" ] && kill -0 "$(cat "$(pidfile "$1")")" 2>/dev/null; }

start_node() {
  local id=$1
  if alive "$id"; then echo "node $id is already running"; return; fi
  mkdir -p "$DIR"
  "$PARLEY" node --id "$id" --listen "127.0.0.1:$((8100 + id))" --peer-listen "127.0.0.1:$((7100 + id))" \
    --peers "$(peers)" --data "$DIR/node-$id" --secret "$(cat "$DIR/secret")" --shards "$SHARDS" \
    >>"$DIR/node-$id.log" 2>&1 &
  echo $! >"$(pidfile "$id")"
  echo "node $id: http://127.0.0.1:$((8100 + id)) (pid $!, log $DIR/node-$id.log)"
}

case "${1:-}" in
  up)
    ensure_built
    mkdir -p "$DIR"
    echo "${2:-3}" >"$DIR/size"
    [ -f "$DIR/secret" ] || head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DIR/secret"
    for id in $(seq 1 "$(count)"); do start_node "$id"; done
    ;;
  down)
    for id in $(seq 1 "$(count)"); do alive "$id" && kill -TERM "$(cat "$(pidfile "$id")")" || true; done
    for id in $(seq 1 "$(count)"); do while alive "$id"; do sleep 0.1; done; rm -f "$(pidfile "$id")"; done
    echo "cluster stopped"
    ;;
  kill) alive "$2" && kill -9 "$(cat "$(pidfile "$2")")" && rm -f "$(pidfile "$2")" && echo "node $2 killed" ;;
  stop) alive "$2" && kill -TERM "$(cat "$(pidfile "$2")")" && while alive "$2"; do sleep 0.1; done; rm -f "$(pidfile "$2")" ;;
  start) ensure_built; start_node "$2" ;;
  status) "$PARLEY" status --node "http://127.0.0.1:$((8100 + ${2:-1}))" ;;
  wipe)
    for id in $(seq 1 "$(count)"); do if alive "$id"; then echo "node $id is running: cluster/local.sh down first"; exit 1; fi; done
    rm -rf "$DIR" && echo "removed $DIR"
    ;;
  *) sed -n '2,13p' "$0"; exit 2 ;;
esac
