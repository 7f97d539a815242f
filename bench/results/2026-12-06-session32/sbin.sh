#!/bin/bash
# sbin.sh N SECONDS INFLIGHT LABEL:BIN...: storage-bench, 1-KiB adds with INFLIGHT in flight at
# the maximum rate (no timer: latency is the round trip and its queueing), alternating.
n=$1 secs=$2 inf=$3; shift 3
for r in $(seq 1 $n); do
  for spec in "$@"; do
    d=$(mktemp -d /var/tmp/sbin.XXXX); sync; sleep 2
    out=$(${spec#*:} --dir $d --sizes 1024 --seconds $secs --inflight $inf 2>&1)
    echo "r$r ${spec%%:*}: $(echo "$out" | grep -E 'add latency' | sed 's/^ *//; s/max rate, //') | $(echo "$out" | grep "bookie:" | grep -oE "[0-9]+ journal fdatasyncs, mean [0-9]+ us") | $(echo "$out" | grep spares: | sed 's/^ *//; s/, direct logs.*//')"
    rm -rf $d
  done
done
