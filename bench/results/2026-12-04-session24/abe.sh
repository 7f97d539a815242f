#!/bin/bash
# quire only, (e) on a fresh server, alternating this session's build and cc80606's
cd /work/main
for i in 1 2; do
  for b in new old; do
    d=build-bench; [ $b = old ] && d=/tmp/old/build-bench
    echo "== $i $b $(date +%T)"
    python3 bench/compare.py --build $d --scenarios e --reps 1 --pulsar none --out /tmp/p24/abe-$i-$b 2>&1 | grep -E "\] e rep"
  done
done
