#!/bin/bash
# Run from a directory holding server-before, server-after (go build -o ... ./cmd/iggy-server on the
# two trees) and iggy-bench. Writes a temporary data directory under /tmp/pb (created if missing).
mkdir -p /tmp/pb
# Side-by-side poll throughput: one data set, the two servers alternately.
set -u
D=$(mktemp -d /tmp/pb/data.XXXX)
PORT=18391
start() { IGGY_SYSTEM_PATH=$D IGGY_TCP_ADDRESS=127.0.0.1:$PORT IGGY_QUIC_ENABLED=false IGGY_WEBSOCKET_ENABLED=false IGGY_HTTP_ENABLED=false IGGY_PARTITION_SCRUB_BYTES_PER_SECOND=${SCRUB:-0} ./$1 --with-default-root-credentials >/tmp/pb/$1.log 2>&1 & PID=$!; for i in $(seq 100); do [ -s $D/runtime/tcp.addr ] && break; sleep 0.1; done; }
cpu() { awk '{print $14+$15}' /proc/$PID/stat; }
stop() { kill $PID; wait $PID; rm -f $D/runtime/tcp.addr; }
start server-after
./iggy-bench --address 127.0.0.1:$PORT --total-data 1GB --keep pinned-producer 2>&1 | grep -iE "total|MB/s" | head -3
stop
for round in 1 2 3; do
  for v in server-before:0 server-after:0 server-after:16MiB; do
    s=${v%%:*}; SCRUB=${v#*:}
    start $s
    c0=$(cpu)
    echo -n "$s scrub=$SCRUB round $round: "; ./iggy-bench --address 127.0.0.1:$PORT --warmup 0s --keep --json pinned-consumer 2>/dev/null | python3 -c 'import json,sys; d=json.load(sys.stdin); a=d["aggregate"]; print(d["complete"], {k:a[k] for k in a if "mb" in k.lower() or "p99" in k.lower() or "messages" in k.lower()})'
    echo "   server CPU ticks (1/100 s) for the run: $(( $(cpu) - c0 ))"
    stop
  done
done
rm -rf $D
