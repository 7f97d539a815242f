#!/bin/bash
# stall.sh OUT [SECONDS]: quire alone: (a) as compare.py runs it, then a 20k msg/s producer for
# SECONDS (90) with 1-s reports, /proc/diskstats and /metrics sampled every second.
out=$1; secs=${2:-90}; mkdir -p $out
. /work/main/bench/results/2026-12-05-session30/srv.sh
cd /work/main
quire_start ${QUIRE:-/work/main/build-bench/src/quire}
echo "data $d pid $pid" > $out/info
samp() {
  while kill -0 $pid 2>/dev/null; do
    t=$(date +%s.%N)
    echo "T $t $(grep ' vda ' /proc/diskstats)" >> $out/disk.txt
    curl -s -m 1 http://127.0.0.1:$wp/metrics | grep -E '^quire_bookie_(gc|spare|flush|direct_sync|journal|disk_)|^quire_bookie_.*trash|^quire_ml_ledger' | sed "s/^/$t /" >> $out/metrics.txt
    sleep 1
  done
}
samp & sp=$!
$PERF both --service-url $U --report-interval-s 1 --op-timeout-s 60 --topics a-q --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 10 --warmup-seconds 3 > $out/a.out 2>&1
echo "A_END $(date +%s.%N)" >> $out/info
$PERF produce --service-url $U --report-interval-s 1 --op-timeout-s 60 --topics x-q --size 1024 --rate 20000 --max-pending 10000 --seconds $secs --warmup-seconds 0 > $out/x.out 2>&1
echo "X_END $(date +%s.%N)" >> $out/info
kill $sp; quire_stop
