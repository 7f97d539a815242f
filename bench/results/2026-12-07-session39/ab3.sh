#!/bin/bash
# (a), (b), (c), (e) beside Pulsar fsync: new (small records the flush dropped from
# the page cache read with O_DIRECT) against base (687d8ed2), alternating.
cd /work/main
for i in 1 2 3; do
  for v in new base; do
    if [ $v = base ]; then B=/tmp/base/build-bench; else B=/work/main/build-bench; fi
    python3 bench/compare.py --build $B --scenarios a,b,c,e --reps 1 --pulsar fsync --out /tmp/s39/ab3-$v-$i > /tmp/s39/ab3-$v-$i.log 2>&1
    rm -f /tmp/s39/ab3-$v-$i/server-pulsar-*.log
  done
done
echo finished > /tmp/s39/ab3.done
