#!/bin/bash
# Every scenario three times at HEAD's product code (687d8ed2's build), beside Pulsar fsync.
cd /work/main
for i in 1 2 3; do
  python3 bench/compare.py --build /tmp/base/build-bench --scenarios a,b,c,d,e,f,g,start --reps 1 --pulsar fsync --out /tmp/s39/cmp$i > /tmp/s39/cmp$i.log 2>&1
  rm -f /tmp/s39/cmp$i/server-pulsar-*.log
  df -k / | tail -1 >> /tmp/s39/cmp-df.txt
done
echo finished > /tmp/s39/cmp.done
