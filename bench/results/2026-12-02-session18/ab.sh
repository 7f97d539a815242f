#!/bin/bash
# ab.sh BUILD LABEL SCEN [extra quire args...]: a fresh quire server; runs the scenarios
# in SCEN (letters of a, b, c, d) in order, each 10 s after 3 s of warm-up; prints each
# one's figures and the server's CPU seconds during it.
BUILD=$1; LABEL=$2; SCEN=$3; shift 3
here=$(cd $(dirname $0) && pwd)
D=$(mktemp -d /tmp/quire-bench.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn "$@" > $D/server.log 2>&1 &
QP=$!
trap 'kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
cpu() { awk '{print $14+$15}' /proc/$QP/stat; }
A="--size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000"
B="--size 100 --rate 0 --batch-max-delay-ms 1 --max-pending 50000 --receiver-queue-size 50000"
C="--size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000"
DD="--size 1024 --rate 0 --disable-batching --max-pending 1"
for s in $(echo $SCEN | grep -o .); do
  case $s in a) X=$A;; b) X=$B;; c) X=$C;; d) X=$DD;; esac
  c0=$(cpu)
  timeout 120 $BUILD/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topics $s-t --json $D/$s.json $X --seconds 10 --warmup-seconds 3 > /dev/null 2>&1
  c1=$(cpu)
  echo "$LABEL $(date +%H:%M:%S) ($s) $(python3 $here/fig.py $D/$s.json) | server cpu $(( (c1-c0) ))/100 s"
done
grep -i "warn\|error" $D/server.log | head -3
