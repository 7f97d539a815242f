#!/bin/bash
# usage: cg.sh BUILD TAG GROUPS  — instruction counts (callgrind) of the server while creating GROUPS x 1000 topics
B=$1; T=$2; G=$3
D=$(mktemp -d /tmp/g8/data.XXXX); P=16680; W=16681
rm -f /tmp/g8/cg.$T.out*
valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file=/tmp/g8/cg.$T.out $B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn > /tmp/g8/cg.$T.log 2>&1 &
QP=$!
for i in $(seq 1 300); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.1; done
callgrind_control -z $QP > /dev/null
for gi in $(seq 0 $((G-1))); do
  $B/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topic-prefix g-$gi --num-topics 1000 --subscription-position Earliest --rate 1000000 --messages 1000 --warmup-seconds 0 --disable-batching --size 100 --report-interval-s 60 --max-connections 1 > /tmp/g8/cg.$T.perf.$gi 2>&1
done
callgrind_control -d $QP > /dev/null
sleep 1
kill $QP; wait $QP
rm -rf $D
for f in /tmp/g8/cg.$T.out.*-01 /tmp/g8/cg.$T.out.*-0[2-9]; do [ -f "$f" ] || continue; n=$(grep -m1 "^summary\|^totals" $f); echo "$f $n"; done
