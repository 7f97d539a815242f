#!/bin/bash
# ametrics.sh BUILD: one quire; (a) for 10 s; /metrics journal figures before and after
BUILD=$1
D=$(mktemp -d /tmp/quire-bench.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn > /dev/null 2>&1 &
QP=$!
trap 'kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
m() { curl -s http://127.0.0.1:$W/metrics | grep -E "^(bookie_journal_JOURNAL_SYNC_(count|sum)|bookkeeper_server_ADD_ENTRY_(count|BYTES_total)|quire_bookie_direct)" | tr '\n' ' '; echo; }
timeout 60 $BUILD/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topics a1 --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 3 --warmup-seconds 0 > /dev/null 2>&1
m0=$(m); t0=$(date +%s%N)
timeout 60 $BUILD/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topics a2 --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 10 --warmup-seconds 0 --json $D/am.json > /dev/null 2>&1
m1=$(m); t1=$(date +%s%N)
echo "$m0"; echo "$m1"; python3 $(dirname $0)/fig.py $D/am.json; echo "wall $(( (t1-t0)/1000000 )) ms"
