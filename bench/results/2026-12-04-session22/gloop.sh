#!/bin/bash
# gloop.sh BUILD N [perf args]: a fresh server, N quire-perf processes of 1000 topics one after another (as (g)); prints topics/s
B=$1; N=$2; shift 2
D=$(mktemp -d /tmp/quire-bench.XXXX); P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'); W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$QWRAP $B/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn > $D/s.log 2>&1 & QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
if [ -n "$PERF" ]; then perf record $PERF -p $QP -o /tmp/p22/gl.perf 2>/dev/null & PF=$!; sleep 0.5; fi
t0=$(date +%s.%N)
for g in $(seq $N); do $B/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topic-prefix g-x-$g --num-topics 1000 --subscription-position Earliest --rate 1000000 --messages 1000 --messages-per-producer 1 --warmup-seconds 0 --disable-batching --size 100 --report-interval-s 60 --max-connections 1 > /dev/null 2>&1 || echo fail; done
t1=$(date +%s.%N)
[ -n "$PERF" ] && kill -INT $PF && wait $PF
echo "topics/s $(python3 -c "print(round($N*1000/($t1-$t0)))") cpu $(awk '{print ($14+$15)/100}' /proc/$QP/stat) s rss $(awk '/VmRSS/ {print $2/1024}' /proc/$QP/status) MB"
for t in /proc/$QP/task/*; do echo "$(cat $t/comm) $(awk '{print ($14+$15)/100}' $t/stat)"; done | sort | awk '{a[$1]+=$2} END {for (k in a) if (a[k]>0.05) printf "%s=%.2f ", k, a[k]; print ""}'
times
kill $QP; wait $QP; rm -rf $D
