#!/bin/bash
# Quire's (e) (100 topics x 10 producers, Key_Shared, 1-s reports) on a fresh server;
# then with a SIGSTOPped Pulsar standalone beside it that ran a 10-s load (as
# compare.py leaves it while Quire runs); then after Pulsar is gone. vmstat and PSI
# during each run (OUT/vm-*.txt, OUT/psi*-*.txt); `perf record -a -g` of 3 s in the
# second and third (OUT/perf-r2.data, OUT/perf-r4.data).
# Usage: pfreeze.sh [OUT]  (from the repository's root; build-bench built)
OUT=${1:-/tmp/pfreeze}; mkdir -p "$OUT"
cd "$(git rev-parse --show-toplevel)"
D=$(mktemp -d /tmp/qf.XXXX); P=$((20000 + RANDOM % 10000)); W=$((P+1))
build-bench/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn > $D/log 2>&1 &
Q=$!; sleep 1
run() { vmstat 1 9 > $OUT/vm-$1.txt & V=$!; cat /proc/pressure/io /proc/pressure/cpu /proc/pressure/memory > $OUT/psi0-$1.txt; timeout 120 build-bench/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --report-interval-s 1 --op-timeout-s 60 --topic-prefix e-$1 --num-topics 100 --producers-per-topic 10 --consumers-per-topic 2 --subscription-type Key_Shared --keys 1000 --batcher key-based --size 1024 --rate 0 --max-pending 200 --receiver-queue-size 1000 --seconds 5 --warmup-seconds 2 2>&1 | grep -E "^\[|produced" | cut -c1-100 | head -4; cat /proc/pressure/io /proc/pressure/cpu /proc/pressure/memory > $OUT/psi1-$1.txt; wait $V; }
echo "== fresh"; run r1
eval "$(PULSAR_CONF_IN=bench/pulsar/bench-fsync.conf.in PULSAR_JVM_MEM='-Xms2g -Xmx2g -XX:MaxDirectMemorySize=4g' bench/pulsar/run-standalone.sh $D/pulsar 2>/dev/null)"
timeout 60 build-bench/tools/quire-perf both --service-url $PULSAR_SERVICE_URL --topics jit --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 10 --warmup-seconds 0 2>&1 | grep produced
kill -STOP $PULSAR_PID; sync; sleep 0.5
echo "== Pulsar stopped"; (sleep 1.5; perf record -a -g -o $OUT/perf-r2.data sleep 3 >/dev/null 2>&1) & PR=$!; run r2; wait $PR
kill -CONT $PULSAR_PID; kill $PULSAR_PID; sleep 5; kill -9 $PULSAR_PID 2>/dev/null; sync; sleep 0.5
echo "== Pulsar gone"; (sleep 1.5; perf record -a -g -o $OUT/perf-r4.data sleep 3 >/dev/null 2>&1) & PR=$!; run r4; wait $PR
kill $Q; wait $Q; rm -rf $D
