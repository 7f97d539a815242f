#!/bin/bash
# alternating gt (odirect flush + group threshold) vs base, c,e,f beside Pulsar
cd /work/main
for i in 1 2; do
  for v in gt base; do
    if [ $v = base ]; then B=/tmp/base/build-bench; else B=/tmp/gt/build-bench; fi
    python3 bench/compare.py --build $B --scenarios c,e,f --reps 1 --pulsar fsync --out /tmp/s38/ab2-$v-$i > /tmp/s38/ab2-$v-$i.log 2>&1
  done
done
echo finished > /tmp/s38/ab2.done
