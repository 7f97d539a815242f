#!/bin/bash
# crash-ab.sh OLD_BUILD NEW_BUILD SECONDS REPS: one store written for SECONDS and
# ended by kill -9; each build starts from its own copy of it, alternating
OLD=$1; NEW=$2; S=${3:-10}; R=${4:-3}
W=/tmp/crash; rm -rf $W; mkdir -p $W
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$NEW/src/quire standalone --data-dir $W/store --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=warn > /tmp/crashfill.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
$NEW/tools/quire-perf produce --service-url pulsar://127.0.0.1:$port --topic-prefix big --num-topics 8 --rate 0 --disable-batching --size 100 --max-pending 2000 --seconds $S --warmup-seconds 0 --report-interval-s 60 2>&1 | grep produced
kill -9 $QP; wait $QP 2>/dev/null
ls -la $W/store/bookie/ledgers | awk '{print $5, $9}' | tr '\n' ' '; echo
for r in $(seq $R); do
  for b in $OLD $NEW; do
    rm -rf $W/copy; cp -a $W/store $W/copy; sync
    echo -n "$b: "; bash /work/main/bench/results/2026-12-01-session15/restart.sh $b $W/copy | grep -E "accepting|ready in" | tr '\n' ' '; echo
  done
done
rm -rf $W
