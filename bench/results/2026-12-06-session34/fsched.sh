#!/bin/bash
# fsched.sh REPS SCHED...: scenario (f) alone (session 30's fab.sh: 2 GB of 1-KiB
# messages, then a catch-up consumer beside a live producer at 50,000 msg/s) on a fresh
# server each time, the block device's I/O scheduler set in turn to each SCHED
# (mq-deadline, none, kyber). Root. As run this session (fsched.txt):
#   fsched.sh 3 mq-deadline none
DEV=${DEV:-vda} BIN=${BIN:-/dev/shm/quire-head}
here=$(dirname "$0")
orig=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/block/$DEV/queue/scheduler)
trap 'echo $orig > /sys/block/$DEV/queue/scheduler' EXIT
reps=$1; shift
for r in $(seq 1 $reps); do
  for s in "$@"; do
    echo $s > /sys/block/$DEV/queue/scheduler
    "$here/../2026-12-05-session30/fab.sh" 1 "$s:$BIN" | sed "s/^r1/r$r/"
  done
done
