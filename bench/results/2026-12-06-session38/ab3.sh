#!/bin/bash
# (e) alone: base vs new (odirect flush only), quire only; --reps 2 (twice on one server)
cd /work/main
for i in 1 2 3; do
  for v in new base; do
    if [ $v = base ]; then B=/tmp/base/build-bench; else B=/work/main/build-bench; fi
    python3 bench/compare.py --build $B --scenarios e --reps 2 --pulsar none --out /tmp/s38/ab3-$v-$i > /tmp/s38/ab3-$v-$i.log 2>&1
  done
done
echo finished > /tmp/s38/ab3.done
