#!/bin/bash
# abd.sh OUT PAIRS: Quire only, (d) (SCEN), the build before (/tmp/s45/bp: cd4061fd with the env-gated probe, off) against build-bench, alternating
out=$1; pairs=$2
mkdir -p $out; cd /work/main
run() { python3 bench/compare.py --build $2 --scenarios ${SCEN:-d} --reps 1 --pulsar none --out $out/$1 > $out/$1.log 2>&1; rm -rf /tmp/quire-bench.*; }
for i in $(seq 1 $pairs); do
  if [ $((i % 2)) = 1 ]; then run base-$i /tmp/s45/bp; run v-$i build-bench; else run v-$i build-bench; run base-$i /tmp/s45/bp; fi
done
echo done > $out/DONE
