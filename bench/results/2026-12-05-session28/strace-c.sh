#!/bin/bash
# (c) for 60 s on a fresh server, 1-s reports; strace (seccomp filter) of rare file syscalls
cd /work/main
n=$1
d=$(mktemp -d /work/fx/q.XXXX)
P=$((30000 + RANDOM % 20000)); W=$((P+1))
sync
./build-bench/src/quire standalone --data-dir $d/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=info > /dev/shm/ns/st$n-server.log 2>&1 &
qp=$!
sleep 0.5
strace -f -tt --seccomp-bpf -e trace=openat,ftruncate,fsync,rename,unlink,fallocate -p $qp -o /dev/shm/ns/st$n-strace.txt &
sp=$!
sleep 0.5
date +%T.%N > /dev/shm/ns/st$n-start.txt
timeout 120 ./build-bench/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --report-interval-s 1 --op-timeout-s 60 --topics c-st$n --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 60 --warmup-seconds 3 > /dev/shm/ns/st$n-perf.txt 2>&1
kill $sp; sleep 0.3; kill $qp; wait $qp
rm -rf $d
