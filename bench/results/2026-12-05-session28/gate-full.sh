#!/bin/bash
# (a)-(f) in compare.py's order on one server, alternating 2 and 1 large reads beside a
# group write (the throwaway build /dev/shm/bexp: QX_GATE), two pairs, quire only
cd /work/main
for i in 1 2; do
  for v in 2 1; do
    sync
    export QX_GATE=$v
    python3 bench/compare.py --build /dev/shm/bexp --scenarios a,b,c,d,e,f --reps 1 --pulsar none --out /dev/shm/ns/full-g$v-$i > /dev/shm/ns/full-g$v-$i.log 2>&1
    echo "gate$v-$i $(grep -E '^\| (c|f) \| (pub_p99_ms|pub_p99.9_ms|catchup_mb_per_s|live_pub_p50_ms|live_pub_p99_ms) ' /dev/shm/ns/full-g$v-$i.log | awk -F'|' '{gsub(/ /,"",$2);gsub(/ /,"",$3);split($4,a," ");printf "%s.%s=%s ",$2,$3,a[1]}')"
  done
done
