#!/bin/bash
# (a), (b), (c), (e), (f) beside Pulsar fsync: new (large entries of small
# groups journaled whole; the flush writes large records with O_DIRECT, small
# ones buffered) against base (687d8ed2), alternating.
cd /work/main
for i in 1 2 3; do
  for v in new base; do
    if [ $v = base ]; then B=/tmp/base/build-bench; else B=/work/main/build-bench; fi
    python3 bench/compare.py --build $B --scenarios a,b,c,e,f --reps 1 --pulsar fsync --out /tmp/s39/ab2-$v-$i > /tmp/s39/ab2-$v-$i.log 2>&1
    rm -f /tmp/s39/ab2-$v-$i/server-pulsar-*.log
  done
done
echo finished > /tmp/s39/ab2.done
