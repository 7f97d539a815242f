#!/bin/bash
# (a), (b) Quire only (no Pulsar), new against base, alternating, the order swapped each pair.
cd /work/main
for i in 1 2 3; do
  if [ $((i % 2)) = 1 ]; then order="new base"; else order="base new"; fi
  for v in $order; do
    if [ $v = base ]; then B=/work/main/build-bench; else B=/tmp/s41/build-new; fi
    python3 bench/compare.py --build $B --scenarios a,b --reps 1 --pulsar none --out /tmp/s41/abq-$v-$i > /tmp/s41/abq-$v-$i.log 2>&1
    echo "abq-$v-$i done $(date +%T)"
  done
done
echo finished
