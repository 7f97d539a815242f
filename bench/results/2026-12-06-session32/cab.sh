#!/bin/bash
# cab.sh REPS LABEL:CMD...: scenario (c) as compare.py runs it (1 KiB at 50,000 msg/s,
# batching 1 ms, producer and consumer; 30 s after 5 s of warm-up), on a fresh server
# that first ran (a) for 10 s (as compare.py's server has, so the journal has trimmed
# files and spares), the servers alternating. Prints publish and e2e latency lines and
# the journal's spare counters.
. /work/main/bench/results/2026-12-05-session30/srv.sh
reps=$1; shift
for r in $(seq 1 $reps); do
  for spec in "$@"; do
    quire_start ${spec#*:}
    timeout 120 $PERF both --service-url $U --topics a --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 10 --warmup-seconds 0 > /dev/null 2>&1
    sleep 2
    out=$(timeout 180 $PERF both --service-url $U --topics c --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 30 --warmup-seconds 5 2>&1)
    m=$(curl -s http://127.0.0.1:$wp/metrics | grep -E "^quire_bookie_spare_(files_taken_total\{kind=\"journal\"\}|journal_files_reused_total)|^bookie_journal_JOURNAL_SYNC_(count|sum)" | awk '{print $2}' | tr '\n' ' ')
    echo "r$r ${spec%%:*}: pub $(echo "$out" | grep 'publish latency' | tail -1 | sed 's/.*p50/p50/; s/p95 [0-9.]* //; s/p99.99.*//') e2e $(echo "$out" | grep 'end-to-end' | tail -1 | sed 's/.*p50/p50/; s/p95 [0-9.]* //; s/p99.99.*//') | sync n,ms,taken,reused $m"
    quire_stop
  done
done
