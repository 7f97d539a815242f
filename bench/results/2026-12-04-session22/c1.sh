#!/bin/bash
# c1.sh BUILD LABEL [quire args]: (c) alone on a fresh server (10 s + 3 s warm-up), then the server's latency metrics
BUILD=$1; LABEL=$2; shift 2
D=$(mktemp -d /tmp/quire-bench.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=info "$@" > $D/server.log 2>&1 &
QP=$!
trap 'kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$P; Q=$BUILD/tools/quire-perf
C="--seconds 10 --warmup-seconds 3"
/usr/bin/time -f "client cpu %U user %S sys" $Q both --service-url $U --topics c-t --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 $C --report-interval-s 1 > $D/c.txt 2>&1; grep "client cpu" $D/c.txt
curl -s http://127.0.0.1:$W/metrics > /tmp/p22/c1-$LABEL-metrics.txt
cp $D/c.txt /tmp/p22/c1-$LABEL-c.txt; cp $D/server.log /tmp/p22/c1-$LABEL-server.log
for t in /proc/$QP/task/*; do echo "$(cat $t/comm) $(awk '{print ($14+$15)/100}' $t/stat)"; done | awk '{a[$1]+=$2} END {for (k in a) if (a[k]>0.05) printf "%s=%.2f ", k, a[k]; print ""}'
for t in /proc/$QP/task/*; do echo "$(cat $t/comm) $(cat $t/schedstat)"; done | awk "{w[\$1]+=\$3; n[\$1]+=\$4; c[\$1]+=\$2} END {for (k in w) if (c[k]>5e7) printf \"%s run %.2fs wait %.0fms slices %d avgwait %.1fus\\n\", k, c[k]/1e9, w[k]/1e6, n[k], w[k]/n[k]/1e3}"
echo "== $LABEL: $(grep 'publish latency' $D/c.txt | tail -1)"
