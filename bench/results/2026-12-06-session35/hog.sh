#!/bin/bash
# hog.sh BUILD OUT HOG [server args]: (a) alone for 30 s (quire standalone + quire-perf both);
# HOG=1: two busy loops taking both vCPUs from t=12 s to 18 s. Every 5 s the server's RSS
# and its /metrics lines on caches, reads and the heap go to OUT.metrics.
set -u
B=$1; out=$2; hog=$3; shift 3
d=$(mktemp -d /var/tmp/q35.XXXX)
$B/src/quire standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=16650 --webServicePort=18080 --journalSyncData=true --logLevel=warn "$@" > $out.srv.log 2>&1 &
sp=$!
sleep 1
args="--topics a-p --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000"
$B/tools/quire-perf both --service-url pulsar://127.0.0.1:16650 $args --seconds 30 --warmup-seconds 2 > $out.perf.txt 2>&1 &
pp=$!
[ "$hog" = 1 ] && ( sleep 12; timeout 6 sh -c "while :; do :; done" & timeout 6 sh -c "while :; do :; done"; ) &
for i in 1 2 3 4 5 6 7; do
  sleep 5
  echo "== t=$((i*5)) rss $(grep VmRSS /proc/$sp/status)" >> $out.metrics
  curl -s localhost:18080/metrics | grep -E "cache|read|heap|resident" | grep -v "^#" >> $out.metrics
done
wait $pp
kill $sp; wait $sp
rm -rf $d
grep -E "^\[|consumed|end-to-end" $out.perf.txt | cut -c1-200
