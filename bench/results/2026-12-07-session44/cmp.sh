#!/bin/bash
# usage: cmp.sh BUILD OUTBASE N...
b=$1; out=$2; shift 2
cd /work/main
for n in "$@"; do
  python3 bench/compare.py --build $b --scenarios a,b,c,d,e,f,g,start --reps 1 --pulsar fsync --out $out/cmp$n > $out/cmp$n.log 2>&1
  rm -rf /tmp/quire-bench.*
done
echo done > $out/DONE
