#!/bin/bash
# usage: idle.sh BUILD GROUPS — GROUPS x 1000 topics whose producer and consumer stay connected
# (rate 1 msg/s over all of a group's producers) for 70 s; server CPU over 20 s once set up.
B=$1; G=$2
D=$(mktemp -d /tmp/g8/data.XXXX)
P=16684; W=16685
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn > /tmp/g8/idle.log 2>&1 &
QP=$!
for i in $(seq 1 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.1; done
for gi in $(seq 0 $((G-1))); do
  $B/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topic-prefix i-$gi --num-topics 1000 --rate 1 --seconds 70 --warmup-seconds 0 --disable-batching --size 100 --report-interval-s 60 --max-connections 1 > /tmp/g8/idle.perf.$gi 2>&1 &
  PIDS="$PIDS $!"
  sleep 0.5
done
sleep 15
[ -n "$PERFIDLE" ] && (perf record -F 999 -g -p $QP -o /tmp/g8/idle.perf.data -- sleep 10 > /dev/null 2>&1 &)
c0=$(awk '{print $14+$15}' /proc/$QP/stat); sleep 20; c1=$(awk '{print $14+$15}' /proc/$QP/stat)
echo "server CPU with $G x 1000 idle topics connected: $(echo "scale=2; ($c1-$c0)/20" | bc) % (ticks/20s)"
kill $PIDS 2>/dev/null; wait $PIDS 2>/dev/null
kill $QP; wait $QP; rm -rf $D
