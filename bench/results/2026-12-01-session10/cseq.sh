#!/bin/bash
# cseq.sh BUILD TAG SEQ... : one quire; runs scenarios in order (a, b, c, s=sleep 10), prints (c) figures
B=$1; TAG=$2; shift 2
cd /work/main
D=$(mktemp -d /tmp/p10/qd.XXXX); P=$B/tools/quire-perf
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=${QLOG:-warn} > /tmp/p10/q-$TAG.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$port; i=0
for s in "$@"; do
  i=$((i+1)); c0=$(awk '{print $14+$15}' /proc/$QP/stat)
  case $s in
    a) args="--size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000";;
    b) args="--size 100 --rate 0 --batch-max-delay-ms 1 --max-pending 50000 --receiver-queue-size 50000";;
    c) args="--size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000";;
    s) sleep 10; echo "$TAG $i sleep"; continue;;
  esac
  $P both --service-url $U --topics $s-$TAG-$i $args --seconds 10 --warmup-seconds 3 --report-interval-s 5 --op-timeout-s 60 > /tmp/p10/$TAG-$i-$s.txt 2>&1
  c1=$(awk '{print $14+$15}' /proc/$QP/stat)
  echo "$TAG $i $s cpu=$((c1-c0)) $(grep 'produced ' /tmp/p10/$TAG-$i-$s.txt | tail -n1 | awk '{print $4}') msg/s | $(grep 'publish latency' /tmp/p10/$TAG-$i-$s.txt | tail -n1 | sed 's/.*mean/mean/')"
done
kill $QP; wait $QP; du -sh $D; rm -rf $D
