#!/bin/bash
# quire only, a,b,c on one server, alternating the build before (cc80606) and after
cd /work/main
/tmp/p24/wakegap 900 > /tmp/p24/gaps.txt &
W=$!
for i in 1 2 3; do
  for b in new old; do
    d=build-bench; [ $b = old ] && d=/tmp/old/build-bench
    echo "== $i $b $(date +%T)"
    python3 bench/compare.py --build $d --scenarios a,b,c --reps 1 --pulsar none --out /tmp/p24/ab-$i-$b 2>&1 | grep -E "\] [abc] rep"
  done
done
kill $W
