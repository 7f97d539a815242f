#!/bin/bash
# lag.sh BUILD LABEL [quire args]: a producer at max rate for 20 s; a consumer of the same
# topic starting 4 s behind (its subscription made before), reading for 14 s: its rate
# against the producer's, i.e. whether a lagging consumer catches up under full write load.
BUILD=$1; LABEL=$2; shift 2
D=$(mktemp -d /tmp/quire-bench.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn "$@" > $D/server.log 2>&1 &
QP=$!
trap 'kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$P
Q=$BUILD/tools/quire-perf
timeout 60 $Q consume --service-url $U --topics lag --subscription s --seconds 1 --warmup-seconds 0 --subscription-position Earliest >/dev/null 2>&1
timeout 60 $Q produce --service-url $U --topics lag --size 1024 --rate 0 --max-pending 10000 --seconds 20 --warmup-seconds 0 --json $D/p.json > $D/p.txt 2>&1 &
PP=$!
sleep 4
timeout 60 $Q consume --service-url $U --topics lag --subscription s --seconds 14 --warmup-seconds 0 --receiver-queue-size 10000 --report-interval-s 2 --json $D/c.json > $D/c.txt 2>&1
wait $PP
curl -s http://127.0.0.1:$W/metrics | grep -E '^(bookie_journal_JOURNAL_SYNC_count|bookkeeper_server_ADD_ENTRY_BYTES_total|quire_bookie_reads_yielded)' | tr '\n' ' '; echo
python3 - $D/p.json $D/c.json <<'PY'
import json,sys
p=json.load(open(sys.argv[1])); c=json.load(open(sys.argv[2]))
print("prod %.1f MB/s | cons %.1f MB/s e2e p50 %.0f ms" % (p["produce_mb_per_s"], c["consume_mb_per_s"], c["end_to_end_latency_ms"]["p50"]))
PY
grep "cons" $D/c.txt | grep -o "cons [0-9.]* msg/s [0-9.]* MB/s" | tr '\n' ' '; echo
