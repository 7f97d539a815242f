#!/bin/bash
# dab.sh LABEL BUILD [env...] -- (d) alone on a fresh server: 10 s + 3 s warm-up
LABEL=$1; BUILD=$2; shift 2
D=$(mktemp -d /work/quire-dab.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
env "$@" $BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=info > $D/server.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
sleep 1; sync
U=pulsar://127.0.0.1:$P; Q=/work/main/build-bench/tools/quire-perf
timeout 60 $Q both --service-url $U --topics d-t --size 1024 --rate 0 --disable-batching --max-pending 1 --seconds 10 --warmup-seconds 3 --report-interval-s 5 > $D/c.txt 2>&1
curl -s http://127.0.0.1:$W/metrics > $D/m.txt
js=$(awk '/^bookie_journal_JOURNAL_SYNC_count/{n=$2} /^bookie_journal_JOURNAL_SYNC_sum/{s=$2} END{if(n>0) printf "%.3f", s/n}' $D/m.txt)
kill $QP; for i in $(seq 100); do kill -0 $QP 2>/dev/null || break; sleep 0.1; done
echo "== $LABEL: $(grep 'publish latency' $D/c.txt | tail -1) | jsync $js | $(grep -c EXP $D/server.log)"
rm -rf $D
