#!/bin/bash
# (f) alternating catch-up read runs of 1 MiB / 256 KiB and large reads allowed during a
# group write 2 / 1, a throwaway build (/dev/shm/bexp) reading QX_RUN and QX_GATE
cd /work/main
for i in 1 2 3; do
  for v in base run256 gate1; do
    sync
    unset QX_RUN QX_GATE
    case $v in run256) export QX_RUN=262144;; gate1) export QX_GATE=1;; esac
    python3 bench/compare.py --build /dev/shm/bexp --scenarios c,f --reps 1 --pulsar none --out /dev/shm/ns/fx-$v-$i > /dev/shm/ns/fx-$v-$i.log 2>&1
    echo "$v-$i $(grep -E '^\| (c|f) \| (pub_p50_ms|pub_p99_ms|catchup_mb_per_s|live_pub_p50_ms|live_pub_p99_ms|live_pub_p99.9_ms|server_cpu_pct) ' /dev/shm/ns/fx-$v-$i.log | awk -F'|' '{gsub(/ /,"",$2);gsub(/ /,"",$3);split($4,a," ");printf "%s.%s=%s ",$2,$3,a[1]}')"
  done
done
