#!/bin/bash
# awin.sh BUILD PENDING: fresh server; (a) with --max-pending PENDING, 10 s after 3 s warm-up
BUILD=$1; PEND=$2
D=$(mktemp -d /tmp/quire-bench.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn > /dev/null 2>&1 &
QP=$!
trap 'kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
timeout 60 $BUILD/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topics a --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending $PEND --receiver-queue-size 10000 --seconds 10 --warmup-seconds 3 --json $D/awin.json > /dev/null 2>&1
echo "$BUILD pending $PEND: $(python3 $(dirname $0)/fig.py $D/awin.json)"
