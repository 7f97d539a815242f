#!/bin/bash
# alternating new (odirect flush only) vs base, c,e,f beside Pulsar
cd /work/main
for i in 1 2; do
  for v in new base; do
    if [ $v = base ]; then B=/tmp/base/build-bench; else B=/work/main/build-bench; fi
    python3 bench/compare.py --build $B --scenarios c,e,f --reps 1 --pulsar fsync --out /tmp/s38/ab4-$v-$i > /tmp/s38/ab4-$v-$i.log 2>&1
  done
done
echo finished > /tmp/s38/ab4.done
