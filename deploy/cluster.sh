#!/usr/bin/env bash
# Start, stop or inspect a local 3-node cluster (deploy/cluster-3.toml).
#   deploy/cluster.sh up | down | status | kill N | start N
# Data and logs go to local_cluster/node-N/; every process is ours to stop.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin/iggy-server}
DIR=${CLUSTER_DIR:-local_cluster}
CONFIG=deploy/cluster-3.toml
NODES=(0 1 2)

start_node() {
  local i=$1 d="$DIR/node-$1"
  mkdir -p "$d"
  if [ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then
    echo "node $i already running (pid $(cat "$d/pid"))"; return
  fi
  IGGY_CONFIG_PATH=$CONFIG IGGY_SYSTEM_PATH="$d/data" \
    nohup "$BIN" --replica-id "$i" --with-default-root-credentials >"$d/server.log" 2>&1 &
  echo $! >"$d/pid"
  echo "node $i started (pid $!, tcp 127.0.0.1:$((8090 + i)), log $d/server.log)"
}

stop_node() { # signal
  local i=$1 sig=$2 d="$DIR/node-$1"
  [ -f "$d/pid" ] || { echo "node $i not running"; return; }
  local pid; pid=$(cat "$d/pid")
  if kill -0 "$pid" 2>/dev/null; then
    kill "-$sig" "$pid"
    for _ in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    echo "node $i stopped ($sig)"
  fi
  rm -f "$d/pid"
}

case "${1:-}" in
  up) for i in "${NODES[@]}"; do start_node "$i"; done ;;
  down) for i in "${NODES[@]}"; do stop_node "$i" TERM; done ;;
  kill) stop_node "${2:?node index}" KILL ;;
  start) start_node "${2:?node index}" ;;
  status)
    for i in "${NODES[@]}"; do
      d="$DIR/node-$i"
      if [ -f "$d/pid" ] && kill -0 "$(cat "$d/pid")" 2>/dev/null; then
        echo "node $i running (pid $(cat "$d/pid"), tcp 127.0.0.1:$((8090 + i)))"
      else
        echo "node $i stopped"
      fi
    done ;;
  *) echo "usage: $0 up|down|status|kill N|start N" >&2; exit 2 ;;
esac
