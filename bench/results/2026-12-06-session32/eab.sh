#!/bin/bash
# eab.sh REPS LABEL:CMD...: scenario (e) as compare.py runs it (100 topics x 10 producers,
# keyed 1 KiB messages, key-based batches, 2 Key_Shared consumers a topic, max rate;
# 20 s after 5 s of warm-up), on a fresh server each, the servers alternating. Prints
# the produce rate and latency, and the journal's spare counters.
. /work/main/bench/results/2026-12-05-session30/srv.sh
reps=$1; shift
for r in $(seq 1 $reps); do
  for spec in "$@"; do
    quire_start ${spec#*:}
    out=$(timeout 180 $PERF both --service-url $U --topic-prefix e --num-topics 100 --producers-per-topic 10 --consumers-per-topic 2 --subscription-type Key_Shared --keys 1000 --batcher key-based --size 1024 --rate 0 --max-pending 200 --receiver-queue-size 1000 --seconds 20 --warmup-seconds 5 2>&1)
    m=$(curl -s http://127.0.0.1:$wp/metrics | grep -E "^quire_bookie_spare_(files_taken_total\{kind=\"journal\"\}|journal_files_reused_total)|^bookie_journal_JOURNAL_SYNC_(count|sum)" | awk '{print $2}' | tr '\n' ' ')
    echo "r$r ${spec%%:*}: $(echo "$out" | grep -E '^ *produced' | tail -1 | awk '{print $4, "msg/s"}') pub $(echo "$out" | grep 'publish latency' | tail -1 | sed 's/.*p50/p50/; s/p95 [0-9.]* //; s/p99.99.*//') | sync n,ms,taken,reused $m"
    quire_stop
  done
done
