#!/bin/bash
# cprobe.sh REPS: (c) alone as compare.py runs it (quire-perf both, 1 KiB at 50,000 msg/s,
# batches of 1 ms, 3 s warm-up, 10 s) on a fresh probe server; each add's times dumped at
# close (QUIRE_PROBE_OUT), split by probe.py.
. /work/main/bench/results/2026-12-05-session30/srv.sh
PERF=/work/main/build-bench/tools/quire-perf
for r in $(seq 1 $1); do
  out=/tmp/s41/probe-$r.txt
  QUIRE_PROBE_OUT=$out quire_start /tmp/probe/build-bench/src/quire
  timeout 60 $PERF both --service-url $U --report-interval-s 5 --op-timeout-s 60 --topics c-probe --size 1024 --rate 50000 \
    --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 10 --warmup-seconds 3 > /tmp/s41/probe-$r.perf 2>&1
  quire_stop
  echo "== r$r $(grep -E 'publish latency' /tmp/s41/probe-$r.perf | tail -1)"
  python3 /tmp/s41/probe.py $out 3
done
