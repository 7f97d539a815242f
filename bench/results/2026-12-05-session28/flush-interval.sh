#!/bin/bash
# Alternates the flush interval 1000 ms (default) and 10000 ms. QUIRE_FLUSH_MS existed only in a
# throwaway build of build-bench (not committed): bookie_open set cfg.flush_interval_ms from it.
# Output: flush-interval.txt.
cd /work/main
sc=${1:-c}; pairs=${2:-3}
for i in $(seq 1 $pairs); do
  for v in 1000 10000; do
    sync
    export QUIRE_FLUSH_MS=$v
    python3 bench/compare.py --build build-bench --scenarios $sc --reps 1 --pulsar none --out /dev/shm/ns/fl$v-$i > /dev/shm/ns/fl$v-$i.log 2>&1
    echo "fl$v-$i $(grep -E '^\| (a|c|d|f) \| (produce_mb_per_s|pub_p50_ms|pub_p99_ms|pub_p99.9_ms|catchup_mb_per_s|live_pub_p99_ms|server_cpu_pct) ' /dev/shm/ns/fl$v-$i.log | awk -F'|' '{gsub(/ /,"",$2);gsub(/ /,"",$3);split($4,a," ");printf "%s.%s=%s ",$2,$3,a[1]}')"
  done
done
