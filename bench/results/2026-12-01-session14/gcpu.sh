#!/bin/bash
# gcpu.sh BUILD [GROUPS]: sequential groups of 1000 topics; per-thread CPU (ms) and wall
B=$1; G=${2:-40}; P=${PERF:-$B/tools/quire-perf}
D=$(mktemp -d /tmp/p14/qd.XXXX)
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=warn $QARGS > /tmp/p14/gcpu.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
cpu() { for t in /proc/$QP/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done | awk '{a[$1]+=$2} END{for(k in a) printf "%s=%d ", k, a[k]*10}'; }
c0=$(cpu); s=$(date +%s%N)
for g in $(seq 1 $G); do $P both --service-url pulsar://127.0.0.1:$port --topic-prefix gt$g --num-topics 1000 --subscription-position Earliest --rate 1000000 --messages 1000 --messages-per-producer 1 --warmup-seconds 0 --disable-batching --size 100 --report-interval-s 60 --max-connections 1 > /dev/null 2>&1 || echo FAIL; done
e=$(date +%s%N); c1=$(cpu)
echo "$(basename $(dirname $B)) topics/s $(( G*1000*1000000000/(e-s) ))  before: $c0"
echo "after: $c1"
kill $QP; wait $QP; rm -rf $D
