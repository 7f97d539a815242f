D=$(mktemp -d /work/quire-prof.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
${QBIN:-/work/main/build-bench/src/quire} standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$P --webServicePort=$W --journalSyncData=true $SARGS > $D/server.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
/work/main/build-bench/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topics c-t --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds ${SECS:-20} --report-interval-s 100 > $D/c.txt 2>&1 &
sleep 5
perf record -q -g -t $(ls /proc/$QP/task | while read t; do n=$(cat /proc/$QP/task/$t/comm); [ "$n" = "${TH:-bk-dsync}" ] && echo $t; done | head -1) -o /dev/shm/prof.perf -- sleep 8 > /dev/null 2>&1
wait %2; kill $QP; sleep 0.5; grep "publish lat" $D/c.txt | tail -1; rm -rf $D
