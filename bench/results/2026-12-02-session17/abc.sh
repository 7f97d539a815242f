#!/bin/bash
# abc.sh BUILD ROUNDS [extra quire args...]: one quire server; (c) fresh, then ROUNDS x ((a),(b),(c));
# samples /proc/pressure/io and disk writes every 0.5 s to $OUT/samples.txt
BUILD=$1; ROUNDS=$2; shift 2
OUT=${OUT:-/tmp/abc-$(date +%H%M%S)}; mkdir -p $OUT
D=$(mktemp -d /tmp/quire-bench.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=info "$@" > $OUT/server.log 2>&1 &
QP=$!
trap 'kill $SP 2>/dev/null; kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
( while kill -0 $QP 2>/dev/null; do echo "$(date +%H:%M:%S.%N | cut -c1-10) $(head -1 /proc/pressure/io | cut -d' ' -f2-3) $(awk '$3=="vda"{print $10, $11}' /proc/diskstats) $(grep -E '^(Dirty|Writeback):' /proc/meminfo | awk '{printf "%s%s ", $1, $2}')"; sleep 0.5; done ) > $OUT/samples.txt &
SP=$!
perf() { # name args...
  local n=$1; shift
  echo "$(date +%H:%M:%S.%N | cut -c1-10) start $n" >> $OUT/marks.txt
  timeout 120 $BUILD/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --json $OUT/$n.json "$@" --seconds 10 --warmup-seconds 3 --report-interval-s 1 > $OUT/$n.out 2>&1
  echo "$n $(python3 $(dirname $0)/fig.py $OUT/$n.json)"
}
A="--size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000"
B="--size 100 --rate 0 --batch-max-delay-ms 1 --max-pending 50000 --receiver-queue-size 50000"
C="--size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000"
perf c0 --topics c-0 $C
perf c00 --topics c-00 $C
for r in $(seq $ROUNDS); do
  perf a$r --topics a-$r $A
  perf b$r --topics b-$r $B
  perf c$r --topics c-$r $C
done
