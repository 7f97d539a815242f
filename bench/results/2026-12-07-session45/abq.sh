#!/bin/bash
# abq.sh OUT PAIRS: Quire only, build-bench, --journalLargeEntryOneSync=false (base) against the default (v), alternating, order swapped each pair
out=$1; pairs=$2
mkdir -p $out; cd /work/main
run() { python3 bench/compare.py --build build-bench --scenarios ${SCEN:-c,f} --reps 1 --pulsar none --out $out/$1 $2 > $out/$1.log 2>&1; rm -rf /tmp/quire-bench.*; }
for i in $(seq 1 $pairs); do
  if [ $((i % 2)) = 1 ]; then run base-$i --quire-arg=--journalLargeEntryOneSync=false; run v-$i; else run v-$i; run base-$i --quire-arg=--journalLargeEntryOneSync=false; fi
done
echo done > $out/DONE
