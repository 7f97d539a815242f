B=$1; G=${2:-20}; P=$B/tools/quire-perf
D=$(mktemp -d /tmp/qd.XXXX)
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=warn > /tmp/gl.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
for g in $(seq 1 $G); do $P both --service-url pulsar://127.0.0.1:$port --topic-prefix gt$g --num-topics 1000 --subscription-position Earliest --rate 1000000 --messages 1000 --messages-per-producer 1 --warmup-seconds 0 --disable-batching --size 100 --report-interval-s 60 --max-connections 1 > /dev/null 2>&1 || echo FAIL; done
for i in 1 2 3; do curl -s -o /tmp/list.json -w "list %{time_total}s " http://127.0.0.1:$wport/admin/v2/persistent/public/default; done
python3 -c "import json; print(len(json.load(open('/tmp/list.json'))), 'topics')"
kill $QP; wait $QP; rm -rf $D
