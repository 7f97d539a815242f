#!/bin/bash
# (c) against one quire standalone, quire-perf with and without --host-witness, alternating
out=/tmp/s44/wcost; mkdir -p $out; cd /work/main
B=build-bench
d=$(mktemp -d /tmp/quire-bench.XXXXXX)
read -r bp wp < <(python3 -c '
import socket
s=[socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1",0))
print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $d/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$bp --webServicePort=$wp --journalSyncData=true > $d/q.log 2>&1 < /dev/null &
q=$!
sleep 2
run() { timeout 120 $B/tools/quire-perf both --service-url pulsar://127.0.0.1:$bp --topics c-$1 --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 10 --warmup-seconds 3 --report-interval-s 5 --json $out/$1.json $2 > $out/$1.out 2>&1; }
for i in 1 2 3 4 5; do
  if [ $((i%2)) = 1 ]; then run w$i --host-witness; run n$i; else run n$i; run w$i --host-witness; fi
done
kill -TERM $q; wait $q; rm -rf $d
python3 - <<'PY'
import json,glob
for k in ('n','w'):
    v=[json.load(open('/tmp/s44/wcost/%s%d.json'%(k,i)))['publish_latency_ms'] for i in range(1,6)]
    print(k, 'p50', [x['p50'] for x in v], 'p99', [x['p99'] for x in v], 'p99.9', [x['p99.9'] for x in v])
PY
