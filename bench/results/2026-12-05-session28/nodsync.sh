#!/bin/bash
# Alternates the bk-dsync thread (default) and none (QUIRE_NO_DSYNC=1), scenarios given.
# QUIRE_NO_DSYNC existed only in a throwaway build of build-bench (not committed): in
# journal_start, `cfg->direct && !getenv("QUIRE_NO_DSYNC") && pthread_create(...)`, so
# that without the thread the journal thread writes and fdatasyncs the group's direct
# records itself, then the journal's (the path journal.c already has when the thread
# cannot start). Output: nodsync.txt.
cd /work/main
sc=${1:-a,c}; pairs=${2:-3}
for i in $(seq 1 $pairs); do
  for v in dsync nodsync; do
    sync
    if [ $v = nodsync ]; then export QUIRE_NO_DSYNC=1; else unset QUIRE_NO_DSYNC; fi
    python3 bench/compare.py --build build-bench --scenarios $sc --reps 1 --pulsar none --out /dev/shm/ns/$v-$i > /dev/shm/ns/$v-$i.log 2>&1
    echo "$v-$i $(grep -E '^\| (a|c|d|f) \| (produce_mb_per_s|pub_p50_ms|pub_p99_ms|pub_p99.9_ms|catchup_mb_per_s|live_pub_p99_ms|server_cpu_pct) ' /dev/shm/ns/$v-$i.log | awk -F'|' '{gsub(/ /,"",$2);gsub(/ /,"",$3);split($4,a," ");printf "%s.%s=%s ",$2,$3,a[1]}')"
  done
done
