#!/bin/bash
# cab.sh LABEL BUILD [env...] -- (c) alone on a fresh server: 10 s + 5 s warm-up
LABEL=$1; BUILD=$2; shift 2
D=$(mktemp -d /work/quire-cab.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
env "$@" $BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=info $SARGS > $D/server.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
sync; sleep 1
U=pulsar://127.0.0.1:$P; Q=/work/main/build-bench/tools/quire-perf
timeout 120 $Q both --service-url $U --topics c-t --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds ${SECS:-10} --warmup-seconds 5 --report-interval-s 1 > $D/c.txt 2>&1
curl -s http://127.0.0.1:$W/metrics > $D/m.txt
ds=$(awk '/^quire_bookie_direct_syncs_total/{n=$2} /^quire_bookie_direct_sync_seconds_total/{s=$2} END{if(n>0) printf "%.3f", s*1000/n}' $D/m.txt)
js=$(awk '/^bookie_journal_JOURNAL_SYNC_count/{n=$2} /^bookie_journal_JOURNAL_SYNC_sum/{s=$2} END{if(n>0) printf "%.3f", s/n}' $D/m.txt)
kill $QP; for i in $(seq 100); do kill -0 $QP 2>/dev/null || break; sleep 0.1; done
echo "== $LABEL: $(grep 'publish latency' $D/c.txt | tail -1) | dsync $ds jsync $js | $(grep -c EXP $D/server.log)"
ls -la $D/data/*/journal $D/data/*/ledgers 2>/dev/null | head -30 > /tmp/p26/last-ls.txt; cp $D/server.log /tmp/p26/last-server.log; cp $D/c.txt /tmp/p26/last-c.txt; rm -rf $D
