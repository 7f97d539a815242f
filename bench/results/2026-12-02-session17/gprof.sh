#!/bin/bash
# gcurve.sh BUILD GROUPS STEP: per STEP groups, wall and loop/metadata CPU
B=$1; G=${2:-100}; S=${3:-10}; P=${PERF:-$B/tools/quire-perf}
D=$(mktemp -d /tmp/qd.XXXX)
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=warn $QARGS > /tmp/gcurve.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
cpu() { for t in /proc/$QP/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done | awk '{a[$1]+=$2} END{printf "%d %d", a["quire"]*10, a["metadata-0"]*10}'; }
read l0 m0 < <(cpu); s=$(date +%s%N); (sleep 2; perf record -F 2000 -p $QP -o ${PERFDATA:-/tmp/g.perf.data} -- sleep 8 > /dev/null 2>&1) &
for g in $(seq 1 $G); do $P both --service-url pulsar://127.0.0.1:$port --topic-prefix gt$g --num-topics 1000 --subscription-position Earliest --rate 1000000 --messages 1000 --messages-per-producer 1 --warmup-seconds 0 --disable-batching --size 100 --report-interval-s 60 --max-connections 1 > /dev/null 2>&1 || echo FAIL
 if [ $((g % S)) = 0 ]; then e=$(date +%s%N); read l1 m1 < <(cpu); echo "groups $((g-S+1))-$g: $(( (e-s)/1000000/S )) ms/group, loop $(( (l1-l0)/S )) ms/group, metadata $(( (m1-m0)/S )) ms/group"; s=$e; l0=$l1; m0=$m1; fi
done
kill $QP; wait $QP; rm -rf $D
