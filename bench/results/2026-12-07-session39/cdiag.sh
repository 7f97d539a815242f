#!/bin/bash
# (c) alone on a fresh quire (build $1), /metrics scraped every second: adds waited, write cache.
B=$1; OUT=$2
D=$(mktemp -d /tmp/cdiag.XXXX)
$B/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=46650 --webServicePort=46680 --journalSyncData=true --logLevel=warn --statsUpdateFrequencyInSecs=1 > $D/server.log 2>&1 &
P=$!
for i in $(seq 100); do curl -s -o /dev/null http://127.0.0.1:46680/metrics && break; sleep 0.05; done
( for i in $(seq 16); do echo "t=$i $(curl -s http://127.0.0.1:46680/metrics | grep -E '^quire_bookie_(adds_waited_total|write_cache_bytes|direct_syncs_total)|^bookie_journal_JOURNAL_ADD_ENTRY\{.*quantile="0.99"|^pulsar_broker_publish_latency\{.*quantile="0.99"' | tr '\n' ' ')"; sleep 1; done ) > $OUT.metrics &
M=$!
/work/main/build-bench/tools/quire-perf both --service-url pulsar://127.0.0.1:46650 --report-interval-s 1 --op-timeout-s 60 --topics c-diag --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 10 --warmup-seconds 3 > $OUT.perf 2>&1
wait $M
kill $P; wait $P
rm -rf $D
