#!/bin/bash
# cpuload.sh BUILD SECONDS: (c)'s load (1 KB at 50,000 msg/s, 1-ms batches, producer and consumer) on a Quire
# whose data directory is on /dev/shm: the CPU work of (c) without its disk I/O
B=$1; S=$2
D=$(mktemp -d /dev/shm/quire-cpu.XXXX); P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'); W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$B/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=info > $D/s.log 2>&1 & QP=$!
trap 'kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
$B/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topics c-t --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds $S --warmup-seconds 0 --report-interval-s 1 > $D/c.txt 2>&1
grep -E "^\[" $D/c.txt | awk "{for(i=1;i<=NF;i++) if(\$i==\"max\") {printf \"%s \", \$(i+1); break}} END {print \"\"}"
cp $D/s.log /tmp/p22/cpuload-server.log
grep "publish latency" $D/c.txt | tail -1
