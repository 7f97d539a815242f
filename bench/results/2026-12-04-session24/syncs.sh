#!/bin/bash
# quire only, (a), (b), (c) on one server, three times, with the bookie's sync means
cd /work/main
for i in 1 2 3; do
  echo "== $i $(date +%T)"
  python3 bench/compare.py --build build-bench --scenarios a,b,c,d,f --reps 1 --pulsar none --out /tmp/p24/syncs-$i 2>&1 | grep -E "\] [abcdf] "
done
