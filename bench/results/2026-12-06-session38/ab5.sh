#!/bin/bash
# (e)'s two modes: the flush's kept page-cache tail 1 GiB (QUIRE_KEEP_MB, throwaway build) vs 256 MiB (base), a,b,c,e beside Pulsar
cd /work/main
for i in 1 2 3; do
  for v in k1g base; do
    if [ $v = base ]; then B=/tmp/base/build-bench; unset QUIRE_KEEP_MB; else B=/tmp/gt/build-bench; export QUIRE_KEEP_MB=1024; fi
    python3 bench/compare.py --build $B --scenarios a,b,c,e --reps 1 --pulsar fsync --out /tmp/s38/ab5-$v-$i > /tmp/s38/ab5-$v-$i.log 2>&1
  done
done
unset QUIRE_KEEP_MB
echo finished > /tmp/s38/ab5.done
