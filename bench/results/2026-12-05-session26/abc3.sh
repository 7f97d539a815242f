#!/bin/bash
# abc3.sh: quire only, (a), (b), (c) on one server per run (compare.py's order), spare files off and on, alternating three times
cd /work/main
for i in 1 2 3; do
  python3 bench/compare.py --build build-bench --scenarios a,b,c --reps 1 --pulsar none --quire-arg=--spareFileZeroRateMB=0 --out /tmp/p26/runs/abc-off$i > /tmp/p26/runs/abc-off$i.log 2>&1
  python3 bench/compare.py --build build-bench --scenarios a,b,c --reps 1 --pulsar none --out /tmp/p26/runs/abc-on$i > /tmp/p26/runs/abc-on$i.log 2>&1
done
