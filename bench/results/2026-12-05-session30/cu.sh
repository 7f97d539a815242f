#!/bin/bash
# cu.sh REPS MB LABEL:CMD...: an unbatched 1-KiB backlog of MB, then one consumer reads it
# from the start (nothing else running), on a fresh server, the servers given alternating;
# DROP=1: the page cache dropped before the catch-up. After each: the bookie's disk reads
# (and its idx reads, quire_bookie_disk_idx_reads_total: added in session 31).
# As run this session:
#   dontneed-catchup.txt:  cu.sh 2 400 "dn=0:env QDONTNEED=0 /dev/shm/quire-exp" \
#                            "dn=1:env QDONTNEED=1 /dev/shm/quire-exp"
#   runs-catchup*.txt:     [DROP=1] cu.sh 3 400 dn=base:/dev/shm/quire-base dn=runs:/dev/shm/quire-runs
. "$(dirname "$0")/srv.sh"
reps=$1 n=$(( $2 * 1000000 / 1024 )); shift 2
for r in $(seq 1 $reps); do
  for spec in "$@"; do
    quire_start ${spec#*:}
    timeout 60 $PERF consume --service-url $U --topics cu --subscription s --seconds 1 --warmup-seconds 0 --subscription-position Earliest > /dev/null 2>&1
    fill=$(timeout 600 $PERF produce --service-url $U --topics cu --size 1024 --rate 0 --disable-batching --max-pending 2000 --messages $n --warmup-seconds 0 2>&1 | grep -E '^ *produced' | tail -1)
    sync; sleep 3; [ -n "$DROP" ] && echo 1 > /proc/sys/vm/drop_caches
    cons=$(timeout 600 $PERF consume --service-url $U --topics cu --subscription s --messages $n --warmup-seconds 0 --receiver-queue-size 1000 --subscription-position Earliest 2>&1 | grep -E '^ *consumed' | tail -1)
    m=$(curl -s http://127.0.0.1:$wp/metrics | grep -E "^quire_bookie_disk_(idx_)?read(_entries|s)_total" | tr '\n' ' ')
    echo "r$r ${spec%%:*} fill: $(echo $fill | awk '{print $4, "msg/s"}')  catch-up: $(echo $cons | awk '{print $4, "msg/s", $6, "MB/s"}')  rss $(ps -o rss= -p $pid) kB $m"
    quire_stop
  done
done
