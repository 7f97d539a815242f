#!/bin/bash
# burst.sh LABEL BUILD: one fresh server, (c) for 10 s (after 3 s of warm-up), 6 s idle,
# (c) again for 10 s (after 2 s), and (d) for 10 s after 6 s idle; the bookie's mean syncs
# and spare counters from /metrics after each. Extra server arguments in $SARGS.
LABEL=$1; BUILD=$2
D=$(mktemp -d /work/quire-burst.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true $SARGS > $D/server.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$P; Q=/work/main/build-bench/tools/quire-perf
m() { curl -s http://127.0.0.1:$W/metrics | awk '/^quire_bookie_direct_syncs_total/{n=$2} /^quire_bookie_direct_sync_seconds_total/{s=$2} /^bookie_journal_JOURNAL_SYNC_count/{jn=$2} /^bookie_journal_JOURNAL_SYNC_sum/{js=$2} /^quire_bookie_spare_zeroed_bytes_total/{z=$2} /^quire_bookie_spare_files_taken_total/{t=t" "$2} END{printf "dsync(cum) %.3f jsync(cum) %.3f zeroedMB %.0f taken%s", (n>0?s*1000/n:0), (jn>0?js/jn:0), z/1048576, t}'; }
C="--topics c-t --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000"
timeout 60 $Q both --service-url $U $C --seconds 10 --warmup-seconds 3 --report-interval-s 5 > $D/c1.txt 2>&1
echo "== $LABEL c1: $(grep 'publish latency' $D/c1.txt | tail -1 | sed 's/publish latency (ms)//') | $(m)"
sleep 6
timeout 60 $Q both --service-url $U $C --seconds 10 --warmup-seconds 2 --report-interval-s 5 > $D/c2.txt 2>&1
echo "== $LABEL c2: $(grep 'publish latency' $D/c2.txt | tail -1 | sed 's/publish latency (ms)//') | $(m)"
sleep 6
timeout 60 $Q both --service-url $U --topics d-t --size 1024 --rate 0 --disable-batching --max-pending 1 --seconds 10 --warmup-seconds 2 --report-interval-s 5 > $D/d.txt 2>&1
echo "== $LABEL d:  $(grep 'publish latency' $D/d.txt | tail -1 | sed 's/publish latency (ms)//') | $(grep -E '^  produced' $D/d.txt | awk '{print $4, "msg/s"}') | $(m)"
kill $QP; for i in $(seq 100); do kill -0 $QP 2>/dev/null || break; sleep 0.1; done
grep "spare with" $D/server.log | sed 's/.*bookie\] //; s|/work/quire-burst[^ ]*/data/bookie/||' | tr '\n' ';'; echo
rm -rf $D
