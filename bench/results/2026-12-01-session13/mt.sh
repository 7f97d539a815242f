#!/bin/bash
# mt.sh BUILD: /metrics time and size on a fresh server, after (e)
B=$1; cd /work/main
D=$(mktemp -d /tmp/p13/qd.XXXX); P=$B/tools/quire-perf
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=warn > /tmp/p13/q-mt.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$port
t() { for i in 1 2 3; do curl -s -o /tmp/p13/metrics.txt -w "%{time_total}s %{size_download}B\n" http://127.0.0.1:$wport/metrics; done; }
t
$P both --service-url $U --topic-prefix e --num-topics 100 --producers-per-topic 10 --consumers-per-topic 2 --subscription-type Key_Shared --keys 1000 --size 1024 --rate 0 --max-pending 200 --receiver-queue-size 1000 --batcher key-based --seconds ${ES:-10} --warmup-seconds 3 --report-interval-s 5 --op-timeout-s 60 > /tmp/p13/mt-e.txt 2>&1
t
wc -l /tmp/p13/metrics.txt; cut -d'{' -f1 /tmp/p13/metrics.txt | grep -v "^#" | sort | uniq -c | sort -rn | head -15
kill $QP; wait $QP; rm -rf $D
