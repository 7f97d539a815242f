#!/bin/bash
# gperf.sh BUILD TAG: scenario (g) (compare.py, Quire only) with `perf record` of the
# server for 6 s while the topics are created; prints (g)'s figures and the share of the
# server's samples in the metrics sampler (metrics_tick and what it calls)
B=$1; TAG=$2; O=/tmp/p11/g-$TAG
cd /work/main
python3 bench/compare.py --build $B --scenarios g --reps 1 --pulsar none --out $O > $O.log 2>&1 &
CP=$!
for i in $(seq 200); do P=$(pgrep -f "^$B/src/quire standalone" | head -1); [ -n "$P" ] && break; sleep 0.1; done
sleep 3
perf record -F 1999 -g -p $P -o $O.perf -- sleep 6 > /dev/null 2>&1
wait $CP
grep "g rep" $O.log | tail -1
perf report -i $O.perf --no-children --sort symbol --stdio 2>/dev/null | grep -E "^ +[0-9]" | head -8
echo "metrics_tick (children): $(perf report -i $O.perf --children --sort symbol --stdio 2>/dev/null | grep -E "^ +[0-9].*metrics_tick" | head -1)"
