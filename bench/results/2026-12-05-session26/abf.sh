#!/bin/bash
# abf.sh: quire only, (c) then (f) on one server per run, spare files off and on, alternating twice
cd /work/main
for i in 1 2; do
  python3 bench/compare.py --build build-bench --scenarios c,f --reps 1 --pulsar none --quire-arg=--spareFileZeroRateMB=0 --out /tmp/p26/runs/abf-off$i > /tmp/p26/runs/abf-off$i.log 2>&1
  python3 bench/compare.py --build build-bench --scenarios c,f --reps 1 --pulsar none --out /tmp/p26/runs/abf-on$i > /tmp/p26/runs/abf-on$i.log 2>&1
done
