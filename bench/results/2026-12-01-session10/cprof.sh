#!/bin/bash
# cprof.sh BUILD TAG SEQ... : like cseq.sh; scenario "C" = (c) with a 5-s perf record of the whole server in its middle
B=$1; TAG=$2; shift 2
D=$(mktemp -d /tmp/p10/qd.XXXX); P=$B/tools/quire-perf
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=info > /tmp/p10/q-$TAG.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$port; i=0
for s in "$@"; do
  i=$((i+1))
  for t in /proc/$QP/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat) $(awk '/^wchar/ {print $2}' $t/io)"; done > /tmp/p10/th0-$TAG-$i
  case $s in
    a) args="--size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000";;
    b) args="--size 100 --rate 0 --batch-max-delay-ms 1 --max-pending 50000 --receiver-queue-size 50000";;
    c|C) args="--size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000";;
  esac
  PP=; if [ $s = C ]; then (sleep 6; perf record -F 1999 -g -p $QP -o /tmp/p10/cp-$TAG-$i.data -- sleep 5 > /dev/null 2>&1) & PP=$!; fi
  $P both --service-url $U --topics $s-$TAG-$i $args --seconds 10 --warmup-seconds 3 --report-interval-s 5 --op-timeout-s 60 > /tmp/p10/$TAG-$i-$s.txt 2>&1
  [ -n "$PP" ] && wait $PP
  for t in /proc/$QP/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat) $(awk '/^wchar/ {print $2}' $t/io)"; done > /tmp/p10/th1-$TAG-$i
  echo "$(date +%T) $TAG $i $s $(grep 'publish latency' /tmp/p10/$TAG-$i-$s.txt | tail -n1 | sed 's/.*mean/mean/' | cut -c1-70) | $(paste /tmp/p10/th0-$TAG-$i /tmp/p10/th1-$TAG-$i | awk '{d=$5-$2; w=($6-$3)/1e6; if (d>0) printf "%s:%d/%.0fMB ", $1, d, w}')"
done
kill $QP; wait $QP; rm -rf $D
