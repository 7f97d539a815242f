#!/bin/bash
# fab.sh REPS LABEL:CMD...: scenario (f) as compare.py runs it (2 GB of 1-KiB messages
# batched 1 ms, then a catch-up consumer beside a live producer at 50,000 msg/s), on a
# fresh server, the servers given alternating. As run this session (fab.txt):
#   fab.sh 3 base:/dev/shm/quire-base runs:/dev/shm/quire-runs
# NICE=N (added in session 31): the catch-up consumer runs under nice -n N.
. "$(dirname "$0")/srv.sh"
reps=$1 n=$(( 2000 * 1000000 / 1024 )); shift
for r in $(seq 1 $reps); do
  for spec in "$@"; do
    quire_start ${spec#*:}
    timeout 60 $PERF consume --service-url $U --topics f --subscription catchup --seconds 1 --warmup-seconds 0 --subscription-position Earliest > /dev/null 2>&1
    timeout 600 $PERF produce --service-url $U --topics f --size 1024 --rate 0 --max-pending 10000 --messages $n --warmup-seconds 0 > /dev/null 2>&1
    sync; sleep 2
    timeout 600 $PERF produce --service-url $U --topics f --size 1024 --rate 50000 --max-pending 10000 --seconds 900 --warmup-seconds 0 > $d.live 2>&1 &
    lp=$!
    sleep 1
    cons=$(timeout 600 nice -n ${NICE:-0} $PERF consume --service-url $U --topics f --subscription catchup --messages $n --warmup-seconds 0 --receiver-queue-size 10000 --subscription-position Earliest 2>&1 | grep -E '^ *consumed' | tail -1)
    kill -INT $lp; wait $lp
    m=$(curl -s http://127.0.0.1:$wp/metrics | grep -E "^quire_bookie_disk_read(_entries|s)_total" | awk '{print $2}' | tr '\n' ' ')
    echo "r$r ${spec%%:*} catch-up $(echo $cons | awk '{print $6, "MB/s"}') live $(grep 'publish latency' $d.live | tail -1 | sed 's/.*p50/p50/; s/p95 [0-9.]* //; s/p99.99.*//') reads(entries,ops) $m"
    rm -f $d.live
    quire_stop
  done
done
