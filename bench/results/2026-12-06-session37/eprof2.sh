#!/bin/bash
# usage: OUT=DIR eprof2.sh LABEL [compare.py args]: scenario (e) twice on one server
# (--reps 2), perf record of the server for 5 s in each run; prints both runs' rates
set -u
cd "$(dirname "$0")/../../.."
: "${OUT:?}"
python3 bench/compare.py --build build-bench --scenarios e --reps 2 --pulsar none ${2:-} --out $OUT/prof-$1 > $OUT/prof-$1.log 2>&1 &
cp=$!
for r in 1 2; do
  for i in $(seq 1 900); do pgrep -f "num-topics 100" > /dev/null && break; sleep 0.1; done
  sleep 6
  pid=$(pgrep -f "quire standalone --data-dir" | head -1)
  perf record -F 499 -g -p $pid -o $OUT/perf-$1-r$r.data -- sleep 5 > /dev/null 2>&1
  for i in $(seq 1 900); do pgrep -f "num-topics 100" > /dev/null || break; sleep 0.1; done
done
wait $cp
python3 -c "
import json;R=json.load(open('$OUT/prof-$1/results.json'))['results']['e']['quire'];print([round(r['produce_msg_per_s']) for r in R])"
