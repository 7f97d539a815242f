#!/bin/bash
# fx.sh BUILD LABEL [quire args]: (f) by hand: fill 2 GB, live 50k msg/s for 14 s,
# catch-up starting 4 s in; live interval reports (1 s) and journal sync stats per second.
BUILD=$1; LABEL=$2; shift 2
D=$(mktemp -d /tmp/quire-bench.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn "$@" > $D/server.log 2>&1 &
QP=$!
trap 'kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$P
Q=$BUILD/tools/quire-perf
timeout 60 $Q consume --service-url $U --topics f-t --subscription catchup --seconds 1 --warmup-seconds 0 --subscription-position Earliest >/dev/null 2>&1
timeout 300 $Q produce --service-url $U --topics f-t --size 1024 --rate 0 --max-pending 10000 --messages 1953125 --warmup-seconds 0 > $D/fill.txt 2>&1
timeout 60 $Q produce --service-url $U --topics f-t --size 1024 --rate 50000 --max-pending 10000 --seconds 14 --warmup-seconds 0 --report-interval-s 1 --json $D/live.json > $D/live.txt 2>&1 &
LP=$!
( for i in $(seq 16); do echo "$(date +%s.%N | cut -c1-14) $(curl -s http://127.0.0.1:$W/metrics | grep -E '^bookie_journal_JOURNAL_SYNC' | tr '\n' ' ')"; sleep 1; done ) > $D/m.txt &
sleep 4
echo "catchup start $(date +%s.%N | cut -c1-14)"
timeout 300 $Q consume --service-url $U --topics f-t --subscription catchup --messages 1953125 --warmup-seconds 0 --receiver-queue-size 10000 --subscription-position Earliest --json $D/cu.json > $D/cu.txt 2>&1
echo "catchup end $(date +%s.%N | cut -c1-14)"
wait $LP
sleep 3
grep -i "MB/s\|msg/s" $D/cu.txt | tail -2
cat $D/live.txt | grep -v "^$" | tail -25
cat $D/m.txt
