#!/bin/bash
# rrun.sh BUILD [quire args]: 2 GB backlog, then a consumer alone from the start
b=$1; shift
d=$(mktemp -d /tmp/p21/qd.XXXX)
$b/src/quire standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=16650 --webServicePort=18080 --journalSyncData=true --logLevel=warn "$@" > $d.log 2>&1 &
qp=$!
sleep 0.5
P="timeout 300 $b/tools/quire-perf"
U="--service-url pulsar://127.0.0.1:16650 --topics r-x"
$P consume $U --subscription s --subscription-position Earliest --seconds 1 --warmup-seconds 0 > /dev/null 2>&1
$P produce $U --size 1024 --rate 0 --max-pending 10000 --messages 2000000 --warmup-seconds 0 > /dev/null 2>&1
sleep 2
$P consume $U --subscription s --messages 2000000 --warmup-seconds 0 --receiver-queue-size 10000 2>&1 | grep "^  consumed"
curl -s 127.0.0.1:18080/metrics | grep -E "^quire_bookie_disk|^quire_ml_cache_misses_total"
kill $qp; wait $qp; rm -rf $d $d.log
