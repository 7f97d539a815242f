#!/bin/bash
set -u
B=$1; out=$2
d=$(mktemp -d /var/tmp/qefair.XXXX)
$B/src/quire standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=16650 --webServicePort=18080 --journalSyncData=true --logLevel=warn > $out.srv.log 2>&1 &
sp=$!
sleep 1
$B/tools/quire-perf both --service-url pulsar://127.0.0.1:16650 --topic-prefix e-x --num-topics 100 \
  --producers-per-topic 10 --consumers-per-topic 2 --subscription-type Key_Shared --receiver-queue-size 1000 --keys 1000 --batcher key-based --size 1024 --rate 0 \
  --max-pending 200 --seconds 25 --warmup-seconds 2 > $out.perf.txt 2>&1 &
pp=$!
sleep 9
for i in 1 2 3 4 5; do curl -s localhost:18080/metrics | grep -E "^quire_broker_publish_buffer|^pulsar_broker_publish_latency.*0.5\"|^quire_broker_conn" ; sleep 1; done > $out.metrics.txt &
perf record -F 299 --call-graph dwarf,16384 -p $sp -o $out.perf.data -- sleep 5 > /dev/null 2>&1
wait $pp
kill $sp; wait $sp
rm -rf $d
grep -E "produced|publish latency|consumed|end-to-end" $out.perf.txt
