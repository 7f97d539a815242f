#!/bin/bash
# eprof.sh BIN OUT: (e) for 25 s on a fresh server; 12 s in, perf record (DWARF call
# graphs) of the server for 4 s and top per thread (OUT.data, OUT.top, OUT.perf)
. "$(dirname "$0")/srv.sh"
out=$2
quire_start $1
( sleep 12; perf record -F 999 --call-graph dwarf,16384 -p $pid -o $out.data -- sleep 4 > /dev/null 2>&1 ) &
( sleep 12; top -b -H -d 8 -n 2 -p $pid > $out.top ) &
timeout 120 $PERF both --service-url $U --topic-prefix e --num-topics 100 --producers-per-topic 10 \
  --consumers-per-topic 2 --subscription-type Key_Shared --keys 1000 --batcher key-based --size 1024 --rate 0 \
  --max-pending 200 --receiver-queue-size 1000 --seconds 25 --warmup-seconds 5 --report-interval-s 5 > $out.perf 2>&1
sleep 1
quire_stop
