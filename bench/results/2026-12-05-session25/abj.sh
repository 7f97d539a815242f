#!/bin/bash
# A/B: the journal with O_DIRECT (new) against 1ed4ef7 (old), quire only, alternating.
cd "$(git rev-parse --show-toplevel)"
# OLD: a build-bench of 1ed4ef7 (git worktree add /tmp/old 1ed4ef7; cmake as README)
for i in 1 2; do
  for v in old new; do
    b=$PWD/build-bench; [ $v = old ] && b=${OLD:-/tmp/old}/build-bench
    python3 bench/compare.py --build $b --scenarios a,b,c,d,e --reps 1 --pulsar none --out ${OUT:-/tmp}/abj-$v-$i > ${OUT:-/tmp}/abj-$v-$i.log 2>&1
  done
done
