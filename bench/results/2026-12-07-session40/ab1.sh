#!/bin/bash
# (a), (b), (c), (e) beside Pulsar fsync: new (HEAD: reads drop pages behind them, session 39)
# against base (687d8ed2: before), alternating, the order swapped each pair; each run
# records the device's reads (disk_read_mb). Then three full runs of HEAD.
cd /work/main
for i in 1 2 3 4 5; do
  if [ $((i % 2)) = 1 ]; then order="new base"; else order="base new"; fi
  for v in $order; do
    if [ $v = base ]; then B=/tmp/base/build-bench; else B=/work/main/build-bench; fi
    python3 bench/compare.py --build $B --scenarios a,b,c,e --reps 1 --pulsar fsync --out /tmp/s40/ab1-$v-$i > /tmp/s40/ab1-$v-$i.log 2>&1
    rm -f /tmp/s40/ab1-$v-$i/server-pulsar-*.log
  done
done
echo finished > /tmp/s40/ab1.done
for i in 1 2 3; do
  python3 bench/compare.py --build /work/main/build-bench --scenarios a,b,c,d,e,f,g,start --reps 1 --pulsar fsync --out /tmp/s40/cmp$i > /tmp/s40/cmp$i.log 2>&1
  rm -f /tmp/s40/cmp$i/server-pulsar-*.log
done
echo finished > /tmp/s40/cmp.done
