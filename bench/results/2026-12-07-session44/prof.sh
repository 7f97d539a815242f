#!/bin/bash
# (f) Quire only under perf record -a -g
out=$1; cd /work/main
python3 bench/compare.py --build build-bench --scenarios f --reps 1 --pulsar none --out $out > $out.log 2>&1 &
pid=$!
# wait for the live phase: compare.py logs; record 25 s after backlog build starts ~?
for i in $(seq 1 1200); do pgrep -f -- "--seconds 900" > /dev/null && break; sleep 0.1; done
perf record -a -g -F 999 -o $out.perf.data -- sleep 6 > /dev/null 2>&1
wait $pid
rm -rf /tmp/quire-bench.*
