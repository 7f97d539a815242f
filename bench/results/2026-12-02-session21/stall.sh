#!/bin/bash
# stall.sh BUILD STALL_S [quire args]: (a) with producer and consumer in two processes;
# the consumer stopped for STALL_S seconds at 8 s; prints the consumer's per-second lines
b=$1; st=$2; shift 2
d=$(mktemp -d /tmp/p21/qd.XXXX)
$b/src/quire standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=16650 --webServicePort=18080 --journalSyncData=true --logLevel=warn "$@" > $d.log 2>&1 &
qp=$!
sleep 0.5
U="--service-url pulsar://127.0.0.1:16650 --topics s-x"
timeout 60 $b/tools/quire-perf consume $U --receiver-queue-size 10000 --seconds 24 --warmup-seconds 0 --report-interval-s 1 > $d.cons 2>&1 &
cp=$!
sleep 1
timeout 60 $b/tools/quire-perf produce $U --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --seconds 20 --warmup-seconds 0 --report-interval-s 1 > $d.prod 2>&1 &
pp=$!
cc=$(pgrep -P $cp); sleep 8; kill -STOP $cc; sleep $st; kill -CONT $cc
wait $pp; wait $cp
grep "^\[" $d.cons | awk '{print $2, $4, $6, "e2e_p50", $14, "max", $NF}' | tr '\n' ';'; echo
grep "^  produced" $d.prod
curl -s 127.0.0.1:18080/metrics | grep -E "^quire_ml_cache_misses_total|^quire_bookie_disk_reads_total"
kill $qp; wait $qp; rm -rf $d $d.log $d.cons $d.prod
