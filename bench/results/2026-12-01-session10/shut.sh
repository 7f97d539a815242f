#!/bin/bash
# shut.sh BUILD TAG [N_GROUPS]: N groups of 1000 topics (g's recipe), then SIGTERM; prints shutdown time
B=$1; TAG=$2; NG=${3:-100}
D=$(mktemp -d /tmp/p10/sd.XXXX); P=$B/tools/quire-perf
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=${QLOG:-warn} > /tmp/p10/sd-$TAG.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
t0=$(date +%s.%N)
seq 0 $((NG-1)) | xargs -P 2 -I{} $P both --service-url pulsar://127.0.0.1:$port --topic-prefix g-$TAG-{} --num-topics 1000 --subscription-position Earliest --rate 1000000 --messages 1000 --messages-per-producer 1 --warmup-seconds 0 --disable-batching --size 100 --report-interval-s 60 --max-connections 1 > /dev/null 2>&1
t1=$(date +%s.%N)
sleep 2
rss=$(awk '/VmRSS/ {print $2}' /proc/$QP/status)
[ -n "$PERFSD" ] && (perf record -F 999 --call-graph dwarf,16384 -t $QP -o /tmp/p10/sd-$TAG.data -- sleep ${PERFSD} > /dev/null 2>&1 &) && sleep 0.3
s0=$(date +%s.%N); kill -TERM $QP; wait $QP; rc=$?; s1=$(date +%s.%N)
echo "$TAG topics=$((NG*1000)) create_s=$(echo "$t1-$t0"|bc) rss_kb=$rss shutdown_s=$(echo "$s1-$s0"|bc) rc=$rc"
rm -rf $D
