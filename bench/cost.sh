#!/usr/bin/env bash
# bench/cost.sh: what a write costs, measured side by side in one run
# (issue 8 point 10, issue 9 point 8). For each setup (a single node, a
# 3-node loopback cluster) and each topic durability (replicated,
# persisted) it starts fresh servers, runs
#   iggy-bench --total-data $DATA --durability D pinned-producer
# against the metadata primary, and reports produce MB/s, batch p50/p99
# and server CPU-seconds per acknowledged GB (utime + stime from
# /proc/<pid>/stat, every server process summed, and per process). With RATE=1 it then runs
# both durabilities of each setup again at the same load, half the slower
# one's measured maximum (--rate-limit): p99 at the same load, and at half
# the cluster's maximum. With DOWN=1 as well, the cluster's half-load runs
# are repeated with one backup (replica 2) killed before the bench: p99 with
# a backup down against all up. Last, the data disk's sequential
# write bandwidth: dd bs=1M count=2048 conv=fdatasync.
#
#   bench/cost.sh                 # DATA=1GB
#   DATA=256MB RATE=1 bench/cost.sh
#   SETUPS=cluster3 DURABILITIES=replicated PERF=/tmp/prof bench/cost.sh
#   SETUPS=cluster3 DURABILITIES=replicated RATE=1 DOWN=1 bench/cost.sh
#
# HALF_MBPS=N runs the same-load rows at N MB/s instead of half the measured
# maximum (to compare two builds at one load); MAXRUNS=0 then skips the
# maximum-throughput rows.
# SETUPS (single cluster3) and DURABILITIES (replicated persisted) pick the
# rows; DD=0 skips the dd line. SETTLE_S (default 20) is the pause before
# each run, after the earlier runs' data is deleted (see run_once). WARMUP
# (default 1s) is iggy-bench's --warmup: batches completed inside it are not
# in the figures. In these runs (8 partitions, 1 MB batches) a fresh node's
# heap grows to about 340 MB in its first seconds, faulting every page in,
# which on this VM is most of a short run's tail: WARMUP=8s measures the
# steady state (it takes the batches of those seconds out of DATA). PERF=DIR records each server process with
# `perf record -e cpu-clock -g` over the bench run into DIR/<setup>-<durability>-<i>.data
# (i = replica id; read with `perf report -i FILE --no-children`).
#
# Everything listens on $IP (default 127.0.0.61, loopback) and lives under a
# temp directory removed at the end (KEEP=1 keeps it, with the server logs,
# written at LOG_LEVEL, default warn);
# every process started is stopped.
set -euo pipefail
cd "$(dirname "$0")/.."
DATA=${DATA:-1GB}
RATE=${RATE:-0}
DOWN=${DOWN:-0}
IP=${IP:-127.0.0.61}
SETUPS=${SETUPS:-single cluster3}
DURABILITIES=${DURABILITIES:-replicated persisted}
DD=${DD:-1}
PERF=${PERF:-}
SETTLE_S=${SETTLE_S:-20}
WARMUP=${WARMUP:-1s}
WORK=$(mktemp -d /tmp/lodestream-cost.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && kill -TERM "$p" 2>/dev/null || true; done
  for p in "${PIDS[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  if [ -n "${KEEP:-}" ]; then echo "kept $WORK" >&2; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
go build -o "$WORK/bin/" ./cmd/iggy-server ./cmd/iggy-bench
TCK=$(getconf CLK_TCK)

cat >"$WORK/cluster.toml" <<EOF
[cluster]
enabled = true
name = "cost-bench"
[tcp]
address = "$IP:18090"
[http]
enabled = false
[quic]
enabled = false
[websocket]
enabled = false
EOF
for i in 0 1 2; do
  cat >>"$WORK/cluster.toml" <<EOF
[[cluster.nodes]]
name = "node-$i"
ip = "$IP"
replica_id = $i
ports = { tcp = $((18090 + i)), http = $((13000 + i)), quic = $((18080 + i)), websocket = $((18190 + i)), tcp_replica = $((19090 + i)) }
EOF
done

start() { # setup -> sets SERVERS (pids)
  SERVERS=()
  local setup=$1 dir="$WORK/data-$RANDOM"
  if [ "$setup" = single ]; then
    IGGY_TCP_ADDRESS=$IP:18090 IGGY_HTTP_ENABLED=false IGGY_QUIC_ENABLED=false IGGY_WEBSOCKET_ENABLED=false \
      IGGY_SYSTEM_PATH="$dir/0" IGGY_SYSTEM_LOGGING_LEVEL=${LOG_LEVEL:-warn} \
      "$WORK/bin/iggy-server" --with-default-root-credentials >"$dir.0.log" 2>&1 &
    SERVERS+=($!)
  else
    for i in 0 1 2; do
      IGGY_CONFIG_PATH="$WORK/cluster.toml" IGGY_SYSTEM_PATH="$dir/$i" IGGY_SYSTEM_LOGGING_LEVEL=${LOG_LEVEL:-warn} \
        "$WORK/bin/iggy-server" --replica-id "$i" --with-default-root-credentials >"$dir.$i.log" 2>&1 &
      SERVERS+=($!)
    done
  fi
  PIDS+=("${SERVERS[@]}")
  # Ready when the primary answers a bench ping-sized run: wait for its port.
  for _ in $(seq 1 300); do
    (exec 3<>"/dev/tcp/$IP/18090") 2>/dev/null && break
    sleep 0.1
  done
  sleep 3 # the cluster elects and every node catches up
}

stop() {
  for p in "${SERVERS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  for p in "${SERVERS[@]}"; do wait "$p" 2>/dev/null || true; done
}

cpu_ticks() { # -> "total per-server,per-server,..."
  local sum=0 each=""
  for p in "${SERVERS[@]}"; do
    read -r -a f <"/proc/$p/stat"
    sum=$((sum + f[13] + f[14]))
    each="$each$((f[13] + f[14])),"
  done
  echo "$sum $each"
}

# run setup durability rate -> prints one table row. A run the bench could
# not complete (a fresh cluster may still refuse the first batch of a new
# partition with 58, which iggy-bench does not retry) is run again on fresh
# servers, up to three attempts; the row says complete=False if none was.
run() {
  local row attempt
  for attempt in 1 2 3; do
    row=$(run_once "$@")
    case "$row" in *complete=True*) break ;; esac
    echo "($1 $2: attempt $attempt incomplete)" >&2
  done
  echo "$row"
}

run_once() {
  local setup=$1 durability=$2 rate=$3 down=${4:-0}
  # The previous run's dirty pages are flushed first: their writeback
  # otherwise ran during this run and billed its CPU and latency (the same
  # cluster run measured 8.5 and 13.2 CPU-s/GB depending on what ran before).
  sync
  # Every run starts on memory in the same state. On this VM the kernel
  # hands freed pages back to the host within seconds, and the page cache
  # pays about 4 us per fresh 4 KiB page on first write (dd into the page
  # cache: 0.9 GB/s on fresh pages, 7.5 GB/s on pages freed a moment ago).
  # Without this, a run right after another run's data was deleted wrote
  # into warm pages and was billed a fraction of the CPU of a cold run
  # (single node: 0.1 against 2.4 CPU-s/GB in the page-cache copy alone).
  rm -rf "$WORK"/data-*/
  sleep "$SETTLE_S"
  start "$setup"
  local label=$setup
  if [ "$down" = 1 ]; then
    # One backup down for the whole run: the primary (replica 0) and
    # replica 1 are the replication quorum.
    kill -KILL "${SERVERS[2]}" 2>/dev/null || true
    wait "${SERVERS[2]}" 2>/dev/null || true
    SERVERS=("${SERVERS[0]}" "${SERVERS[1]}")
    label="$setup, replica 2 down"
    sleep 3
  fi
  local before after out="$WORK/bench.json" perfs=()
  rm -f "$out"
  if [ -n "$PERF" ]; then
    mkdir -p "$PERF"
    local i=0
    for p in "${SERVERS[@]}"; do
      perf record -q -e cpu-clock -F 499 -g -p "$p" -o "$PERF/$setup-$durability-$i.data" >/dev/null 2>&1 &
      perfs+=($!)
      i=$((i + 1))
    done
    sleep 0.5
  fi
  before=$(cpu_ticks)
  "$WORK/bin/iggy-bench" --address "$IP:18090" --total-data "$DATA" --warmup "$WARMUP" --no-progress --json \
    --durability "$durability" --rate-limit "$rate" pinned-producer >"$out" || true # incomplete: in the row
  after=$(cpu_ticks)
  for p in "${perfs[@]:-}"; do [ -n "$p" ] && kill -INT "$p" 2>/dev/null || true; done
  for p in "${perfs[@]:-}"; do [ -n "$p" ] && wait "$p" 2>/dev/null || true; done
  stop
  [ -s "$out" ] || { echo "iggy-bench printed nothing ($setup $durability); server logs: $WORK" >&2; tail -5 "$WORK"/data-*.log >&2; return 1; }
  python3 - "$label" "$durability" "$rate" "$before" "$after" "$TCK" "$out" <<'PY'
import json, sys
setup, durability, rate, before, after, tck, path = sys.argv[1:]
before, before_each = before.split()
after, after_each = after.split()
each = [int(a) - int(b) for a, b in zip(after_each.strip(",").split(","), before_each.strip(",").split(","))]
d = json.load(open(path))
a = d["aggregate"]
p = d["params"]
gb = p["producers"] * p["message_batches_per_producer"] * p["messages_per_batch"] * p["message_size_bytes"] / 1e9
cpu = (int(after) - int(before)) / int(tck)
lat = a["batch_latency"]
if not d["complete"]:
    print(f"{setup} {durability}: incomplete run: {d.get('stop_reason', '')}: {d.get('errors', [])[:3]}", file=sys.stderr)
per_node = " / ".join(f"{e / int(tck) / gb:.1f}" for e in each)
print(f"| {setup} | {durability} | {rate if rate != '0' else 'max'} | {a['mb_per_second']:.0f} MB/s | "
      f"{lat['p50_ms']:.1f} / {lat['p99_ms']:.1f} ms | {cpu / gb:.1f} CPU-s/GB | {per_node} | complete={d['complete']} |")
PY
}

echo "| setup | durability | rate | produce | batch p50 / p99 | server CPU per acked GB | per node (replica 0 = primary / 1 / 2) | |"
echo "|---|---|---|---|---|---|---|---|"
declare -A MAX
for setup in $SETUPS; do
  for durability in $DURABILITIES; do
    [ "${MAXRUNS:-1}" = 0 ] && [ -n "${HALF_MBPS:-}" ] && continue
    row=$(run "$setup" "$durability" 0)
    echo "$row"
    MAX[$setup-$durability]=$(echo "$row" | awk -F'|' '{print $5}' | awk '{print $1}')
  done
done
if [ "$RATE" = 1 ]; then
  # The same load for both durabilities: half the slower one's maximum.
  for setup in $SETUPS; do
    maxes=""
    for durability in $DURABILITIES; do maxes="$maxes${MAX[$setup-$durability]:-},"; done
    if [ -n "${HALF_MBPS:-}" ]; then
      half=$HALF_MBPS
    else
      half=$(python3 -c "print(max(1, min([$maxes]) / 2))")
    fi
    for durability in $DURABILITIES; do
      run "$setup" "$durability" "$half"
      if [ "$DOWN" = 1 ] && [ "$setup" = cluster3 ]; then
        run "$setup" "$durability" "$half" 1
      fi
    done
  done
fi
[ "$DD" = 1 ] || exit 0
echo
echo "dd on the data disk ($WORK):"
dd if=/dev/zero of="$WORK/dd.bin" bs=1M count=2048 conv=fdatasync 2>&1 | tail -1
rm -f "$WORK/dd.bin"
