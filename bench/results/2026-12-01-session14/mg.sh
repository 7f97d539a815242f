#!/bin/bash
# mg.sh BUILD N: N topics with a producer and a consumer each (1 msg/s each), /metrics time and size while they run; QARGS: more server options
B=$1; N=$2; cd /work/main
D=$(mktemp -d /tmp/p14/qd.XXXX); P=$B/tools/quire-perf
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=warn $QARGS > /tmp/p14/q-mg.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
PP=""
for k in $(seq 0 $(( N / 1000 - 1 ))); do
$P both --service-url pulsar://127.0.0.1:$port --topic-prefix g$k --num-topics 1000 --rate 1000 --disable-batching --size 100 --seconds 90 --warmup-seconds 0 --report-interval-s 60 --max-connections 1 > /tmp/p14/mg-perf-$k.txt 2>&1 &
PP="$PP $!"
done
for i in $(seq 120); do n=$(curl -s http://127.0.0.1:$wport/metrics | awk '/^pulsar_producers_count\{/ {s+=$2} END {print s+0}'); [ "$n" -ge "$N" ] && break; sleep 1; done
echo "topics with producers: $n"
for i in 1 2 3; do curl -s -o /tmp/p14/metrics-g.txt -m 600 -w "%{time_total}s %{size_download}B\n" http://127.0.0.1:$wport/metrics; done
kill $PP 2>/dev/null; wait $PP 2>/dev/null; kill $QP; wait $QP; rm -rf $D
