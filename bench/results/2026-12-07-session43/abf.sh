#!/bin/bash
# abf.sh OUT PAIRS: (c),(f) Quire only, HEAD build (base) against the variant (v), alternating, order swapped each pair
out=$1; pairs=$2; V=${V:-/tmp/s43/wt/build-bench}
mkdir -p $out; cd /work/main
run() { python3 bench/compare.py --build $2 --scenarios ${SCEN:-c,f} --reps 1 --pulsar none --out $out/$1 > $out/$1.log 2>&1; rm -rf /tmp/quire-bench.*; }
for i in $(seq 1 $pairs); do
  if [ $((i % 2)) = 1 ]; then run base-$i build-bench; run v-$i $V; else run v-$i $V; run base-$i build-bench; fi
done
echo done > $out/DONE
