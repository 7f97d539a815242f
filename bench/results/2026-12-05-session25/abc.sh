#!/bin/bash
# A/B of (c) and (d): the journal with O_DIRECT (new) against 1ed4ef7 (old), alternating.
cd "$(git rev-parse --show-toplevel)"
# OLD: a build-bench of 1ed4ef7 (git worktree add /tmp/old 1ed4ef7; cmake as README)
for i in 1 2 3 4; do
  for v in old new; do
    b=$PWD/build-bench; [ $v = old ] && b=${OLD:-/tmp/old}/build-bench
    python3 bench/compare.py --build $b --scenarios c,d --reps 1 --pulsar none --out ${OUT:-/tmp}/abc-$v-$i > ${OUT:-/tmp}/abc-$v-$i.log 2>&1
  done
done
