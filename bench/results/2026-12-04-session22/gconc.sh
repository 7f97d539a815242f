#!/bin/bash
# gconc.sh BUILD N: N x 1000 topics as (g), then 6 /metrics scrapes at once: their HTTP statuses
B=$1; N=$2
D=$(mktemp -d /tmp/quire-bench.XXXX); P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'); W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$B/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn > $D/s.log 2>&1 & QP=$!
trap 'kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
for g in $(seq $N); do $B/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topic-prefix g-x-$g --num-topics 1000 --subscription-position Earliest --rate 1000000 --messages 1000 --messages-per-producer 1 --warmup-seconds 0 --disable-batching --size 100 --report-interval-s 60 --max-connections 1 > /dev/null 2>&1 || echo fail; done
for k in 1 2 3 4 5 6; do curl -s -m 60 -o /dev/null -w "%{http_code} %{size_download} %{time_total}\n" http://127.0.0.1:$W/metrics & done; wait %2 %3 %4 %5 %6 %7 2>/dev/null; sleep 1
echo "rss $(awk '/VmRSS/ {print $2/1024}' /proc/$QP/status) MB"
