#!/bin/bash
# ce.sh BUILD: one server; (c), (e) key-based, (c); journal sync count/sum and write latency around each (c)
B=$1; cd /work/main
D=$(mktemp -d /tmp/p13/qd.XXXX); P=$B/tools/quire-perf
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=warn $QARGS > /tmp/p13/q-ce.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$port
m() { curl -s http://127.0.0.1:$wport/metrics | grep -E "^bookie_journal_JOURNAL_SYNC_(count|sum)|^quire_bookie_direct|^bookie_(write|read)_cache|^quire_bookie_gc_passes" | tr '\n' ' '; echo; }
c() { m; $P both --service-url $U --topics c-$1 --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 10 --warmup-seconds 3 --report-interval-s 5 > /tmp/p13/ce-$1.txt 2>&1; m; grep "publish latency" /tmp/p13/ce-$1.txt; }
c 1
$P both --service-url $U --topic-prefix e --num-topics 100 --producers-per-topic 10 --consumers-per-topic 2 --subscription-type Key_Shared --keys 1000 --size 1024 --rate 0 --max-pending 200 --receiver-queue-size 1000 --batcher key-based --seconds 10 --warmup-seconds 3 --report-interval-s 5 --op-timeout-s 60 > /tmp/p13/ce-e.txt 2>&1
c 2
if [ -n "$PERFC" ]; then (perf record -F 999 -g -p $QP -o /tmp/p13/perf-c3.data -- sleep 8 >/dev/null 2>&1 &); fi
c 3
kill $QP; wait $QP; rm -rf $D
