#!/bin/bash
# alternating base (687d8ed2) vs new (flush O_DIRECT), quire only
cd /work/main
for i in 1 2; do
  for v in base new; do
    if [ $v = base ]; then B=/tmp/base/build-bench; else B=/work/main/build-bench; fi
    python3 bench/compare.py --build $B --scenarios c,e,f --reps 1 --pulsar none --out /tmp/s38/ab1-$v-$i > /tmp/s38/ab1-$v-$i.log 2>&1
  done
done
echo finished > /tmp/s38/ab1.done
