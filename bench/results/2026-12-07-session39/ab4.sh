#!/bin/bash
# cu.sh (800 MB, three pairs), then (a), (b), (c), (e) beside Pulsar fsync: new (pages of
# small records the flush dropped dropped again behind the reads) against base, alternating.
cd /tmp/s39
timeout 900 bash /tmp/s39/cu.sh 3 800 base:/tmp/base/build-bench/src/quire lag:/work/main/build-bench/src/quire > /tmp/s39/cu-800-lag.txt 2>&1
cd /work/main
for i in 1 2 3; do
  for v in new base; do
    if [ $v = base ]; then B=/tmp/base/build-bench; else B=/work/main/build-bench; fi
    python3 bench/compare.py --build $B --scenarios a,b,c,e --reps 1 --pulsar fsync --out /tmp/s39/ab4-$v-$i > /tmp/s39/ab4-$v-$i.log 2>&1
    rm -f /tmp/s39/ab4-$v-$i/server-pulsar-*.log
  done
done
echo finished > /tmp/s39/ab4.done
