#!/bin/bash
# arun.sh BUILD SECS [quire args]: (a) with 1-s reports, fresh server
b=$1; s=$2; shift 2
d=$(mktemp -d /tmp/p21/qd.XXXX)
$b/src/quire standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=16650 --webServicePort=18080 --journalSyncData=true --logLevel=warn "$@" > $d.log 2>&1 &
qp=$!
sleep 0.5
timeout $((s+60)) $b/tools/quire-perf both --service-url pulsar://127.0.0.1:16650 --topics a-x --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds $s --warmup-seconds 5 --report-interval-s 1 2>&1
curl -s 127.0.0.1:18080/metrics | grep -E "^quire_bookie_reads_(yielded|waited)|^quire_ml_cache_(hits|miss)|^quire_bookie_disk" | head -20
kill $qp; wait $qp; rm -rf $d $d.log
