#!/bin/bash
# abb.sh OUT PAIRS: Quire only, base build (/tmp/s46/bb-base) against build-bench (v), alternating, order swapped each pair
out=$1; pairs=$2
mkdir -p $out; cd /work/main
run() { python3 bench/compare.py --build $2 --scenarios ${SCEN:-c,f} --reps 1 --pulsar none --out $out/$1 > $out/$1.log 2>&1; rm -rf /tmp/quire-bench.*; }
for i in $(seq 1 $pairs); do
  if [ $((i % 2)) = 1 ]; then run base-$i /tmp/s46/bb-base; run v-$i build-bench; else run v-$i build-bench; run base-$i /tmp/s46/bb-base; fi
done
echo done > $out/DONE
