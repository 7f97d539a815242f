#!/bin/bash
cd /work/main
for i in 1 2 3; do
  python3 bench/compare.py --build /tmp/base/build-bench --scenarios a,b,c,d,e,f,g,start --reps 1 --pulsar fsync --out /tmp/s38/cmp$i > /tmp/s38/cmp$i.log 2>&1
done
echo finished > /tmp/s38/cmp.done
