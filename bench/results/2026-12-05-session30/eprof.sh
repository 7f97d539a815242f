#!/bin/bash
# eprof.sh BIN OUT: (e) on a fresh server for 25 s; perf record of the server 8 s in the middle
bin=$1; out=$2
PERF=/work/main/build-bench/tools/quire-perf
d=$(mktemp -d /var/tmp/ep.XXXX); sync
fp() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
bp=$(fp); wp=$(fp)
$bin standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$bp --webServicePort=$wp --journalSyncData=true --logLevel=warn > $d.log 2>&1 &
pid=$!
for k in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/$bp) 2>/dev/null && break; sleep 0.05; done
( sleep 12; perf record -F 999 --call-graph dwarf,16384 -p $pid -o $out.data -- sleep 4 > /dev/null 2>&1 ) &
( sleep 12; top -b -H -d 8 -n 2 -p $pid > $out.top ) &
timeout 120 $PERF both --service-url pulsar://127.0.0.1:$bp --topic-prefix e --num-topics 100 --producers-per-topic 10 \
  --consumers-per-topic 2 --subscription-type Key_Shared --keys 1000 --batcher key-based --size 1024 --rate 0 \
  --max-pending 200 --receiver-queue-size 1000 --seconds 25 --warmup-seconds 5 --report-interval-s 5 > $out.perf 2>&1
sleep 1
kill $pid; wait $pid 2>/dev/null; rm -rf $d $d.log
