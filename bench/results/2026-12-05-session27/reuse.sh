#!/bin/bash
# reuse.sh LABEL: a direct log freed by GC under steady load. A fresh server (SARGS);
# 1.3 GB to topic x at max rate (one direct log of x alone, sealed), then (c) on topic y
# for 110 s (5-s reports); 2 s in, topic x deleted; GC's first pass (60 s after the
# start) finds x's sealed log dead: freed (spares off) or kept as the direct spare
# (spares on), which the current log rolls to at once. Prints (c)'s intervals, the
# server's GC/spare lines and the bookie's direct-sync figures from /metrics.
LABEL=$1
D=$(mktemp -d /work/quire-reuse.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
Q=/work/main/build-bench/tools/quire-perf
/work/main/build-bench/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=info $SARGS > $D/server.log 2>&1 &
QP=$!
T0=$(date +%s.%N)
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$P
timeout 60 $Q produce --service-url $U --topics x --size 1024 --rate 0 --messages 1300000 --batch-max-delay-ms 1 --max-pending 10000 > $D/x.txt 2>&1
timeout 200 $Q both --service-url $U --topics y --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds 110 --report-interval-s 5 > $D/c.txt 2>&1 &
CP=$!
echo "x: $(grep 'produced' $D/x.txt | tail -1)"; ls -la $D/data/bookie/ledgers/ | grep "\.log"
sleep 2
curl -s -o /dev/null -w "delete x: %{http_code}\n" -X DELETE "http://127.0.0.1:$W/admin/v2/persistent/public/default/x?force=true"
metrics() { curl -s http://127.0.0.1:$W/metrics | grep -E "^quire_bookie_(direct_sync|direct_syncs|spare_|gc_logs)" | tr '\n' ' '; echo; }
sleep 55; echo "t+57 $(metrics)"
wait $CP
echo "end  $(metrics)"
kill $QP; for i in $(seq 100); do kill -0 $QP 2>/dev/null || break; sleep 0.1; done
echo "== $LABEL"
grep -E "^\[" $D/c.txt | grep -v warm | awk '{print}' | cut -c1-200
grep "publish latency" $D/c.txt | tail -1
python3 - $D/server.log $T0 <<'PY'
import sys,re,datetime
t0=float(sys.argv[2])
for l in open(sys.argv[1]):
    m=re.match(r'(\d{4}-\d\d-\d\dT[\d:.]+)Z (\w+)\s+\[(\w+)\] (.*)',l)
    if m and re.search(r'gc:|spare|kept as', m.group(4)):
        t=datetime.datetime.strptime(m.group(1),'%Y-%m-%dT%H:%M:%S.%f').replace(tzinfo=datetime.timezone.utc).timestamp()
        print('  %.1f %s' % (t-t0, m.group(4)[:150]))
PY
rm -rf $D
