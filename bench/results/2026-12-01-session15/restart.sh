#!/bin/bash
# restart.sh BUILD DIR: time from exec to "ready" and to the port accepting
B=$1; D=$2
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
s=$(date +%s%N)
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=info > /tmp/p15/restart.log 2>&1 &
QP=$!
for i in $(seq 3000); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.01; done
e=$(date +%s%N)
echo "accepting after $(( (e-s)/1000000 )) ms; RSS $(awk '/VmRSS/{print $2}' /proc/$QP/status) kB"
grep -i "ready in\|index\|replay" /tmp/p15/restart.log | head -5
kill $QP; wait $QP
