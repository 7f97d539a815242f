#!/bin/bash
# cvm.sh BUILD TAG SEQ... : one quire; runs scenarios in order (a, b, c, e; s = sleep 10;
# D = sync + drop the page cache; F = print what is cached per directory;
# J = drop the journal files' pages; L = drop the other files' pages), prints per run: the publish latency, the server's
# CPU ticks, and the kernel's reclaim in that run (/proc/vmstat deltas, free MB after)
B=$1; TAG=$2; shift 2
cd /work/main
D=$(mktemp -d /tmp/p11/qd.XXXX); P=$B/tools/quire-perf
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=${QLOG:-warn} > /tmp/p11/q-$TAG.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$port; i=0
vm() { awk '/^(pgscan_kswapd|pgscan_direct|allocstall_movable|allocstall_normal|pgsteal_kswapd) / {printf "%s ", $2}' /proc/vmstat; }
for s in "$@"; do
  i=$((i+1)); c0=$(awk '{print $14+$15}' /proc/$QP/stat); v0=($(vm))
  case $s in
    d) args="--size 1024 --rate 0 --batch-max-delay-ms 0 --max-pending 1 --receiver-queue-size 1000";;
    a) args="--size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000";;
    b) args="--size 100 --rate 0 --batch-max-delay-ms 1 --max-pending 50000 --receiver-queue-size 50000";;
    c) args="--size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000";;
    e) args="--num-topics 100 --producers-per-topic 10 --consumers-per-topic 2 --subscription-type Key_Shared --keys 1000 --size 1024 --rate 0 --max-pending 200 --receiver-queue-size 1000";;
    s) sleep 10; echo "$TAG $i sleep"; continue;;
    F) echo "$TAG $i cached: $(cd $D && for d in $(find . -type d); do fincore -b --noheadings -o RES,SIZE $d/* 2>/dev/null | awk -v d=$d '{c+=$1; s+=$2} END {if (s) printf "%s %d/%d MB; ", d, c/1048576, s/1048576}'; done)"; continue;;
    J|L) python3 bench/results/2026-12-02-session11/dontneed.py $D $s; echo "$TAG $i dontneed $s"; continue;;
    D) sync; echo 1 > /proc/sys/vm/drop_caches; echo "$TAG $i dropped caches, free $(free -m | awk '/Mem/ {print $4}') MB"; continue;;
  esac
  $P both --service-url $U $([ $s = e ] && echo --topic-prefix || echo --topics) $s-$TAG-$i $args --seconds 10 --warmup-seconds 3 --report-interval-s 5 --op-timeout-s 60 > /tmp/p11/$TAG-$i-$s.txt 2>&1
  c1=$(awk '{print $14+$15}' /proc/$QP/stat); v1=($(vm))
  echo "$(date +%T) $TAG $i $s cpu=$((c1-c0)) $(grep 'produced ' /tmp/p11/$TAG-$i-$s.txt | tail -n1 | awk '{print $4}') msg/s | $(grep 'publish latency' /tmp/p11/$TAG-$i-$s.txt | tail -n1 | sed 's/.*mean/mean/' | cut -c1-75) | $(grep -o "drain timed out.*" /tmp/p11/$TAG-$i-$s.txt) rss $(awk '/VmHWM/ {print $2/1024}' /proc/$QP/status)MB | allocstall $(( v1[0]+v1[1]-v0[0]-v0[1] )) kswapd-scan $(( v1[3]-v0[3] )) direct-scan $(( v1[4]-v0[4] )) free $(free -m | awk '/Mem/ {print $4}')MB"
done
kill $QP; wait $QP; du -sh $D; rm -rf $D
