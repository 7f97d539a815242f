#!/bin/bash
# sblate.sh N SECONDS LABEL:BIN...: sbab.sh with the line storage-bench prints since
# session 32 for a fixed rate: how late each add was issued by the rate timer (part
# of its latency).
n=$1 secs=$2; shift 2
for r in $(seq 1 $n); do
  for spec in "$@"; do
    d=$(mktemp -d /var/tmp/sbl.XXXX); sync; sleep 2
    out=$(${spec#*:} --dir $d --sizes 1024 --seconds $secs --rate 50000 2>&1)
    echo "r$r ${spec%%:*}: $(echo "$out" | grep -E 'add latency' | sed 's/^ *//; s/fixed rate 50000\/s: *1024 B: *//; s/ *(.*//') | late $(echo "$out" | grep 'issued late' | sed 's/.*us //') | $(echo "$out" | grep "bookie:" | grep -oE "[0-9]+ journal fdatasyncs, mean [0-9]+ us") | $(echo "$out" | grep spares: | sed 's/^ *//; s/, direct logs.*//')"
    rm -rf $d
  done
done
