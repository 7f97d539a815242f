#!/bin/bash
# bigfill.sh BUILD DIR SECONDS: unbatched 100-B messages to 8 topics for SECONDS, then stop
B=$1; D=$2; S=${3:-60}
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=warn > /tmp/p15/bigfill.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
$B/tools/quire-perf produce --service-url pulsar://127.0.0.1:$port --topic-prefix big --num-topics 8 --rate 0 --disable-batching --size 100 --max-pending 2000 --seconds $S --warmup-seconds 0 --report-interval-s 20 2>&1 | tail -3
kill $QP; wait $QP
