#!/bin/bash
# stall.sh LABEL SECS: (c) for SECS s on a fresh server (spares off, log at info), 1-s reports;
# prints the 1-s intervals whose max is above 15 ms and the server's log lines around them.
LABEL=$1; SECS=${2:-60}
D=$(mktemp -d /work/quire-stall.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
${QBIN:-/work/main/build-bench/src/quire} standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=info --spareFileZeroRateMB=0 $SARGS > $D/server.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$P; Q=/work/main/build-bench/tools/quire-perf
T0=$(date +%s.%N)
timeout $((SECS+60)) $Q both --service-url $U --topics c-t --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds $SECS --warmup-seconds 3 --report-interval-s 1 > $D/c.txt 2>&1
kill $QP; for i in $(seq 100); do kill -0 $QP 2>/dev/null || break; sleep 0.1; done
echo "== $LABEL: $(grep 'publish latency' $D/c.txt | tail -1)"
python3 - $D/c.txt $D/server.log $T0 <<'PY'
import sys,re,datetime
c,log,t0=sys.argv[1],sys.argv[2],float(sys.argv[3])
ev=[]
for l in open(log):
    m=re.match(r'(\d{4}-\d\d-\d\dT[\d:.]+)Z (\w+)\s+\[(\w+)\] (.*)',l)
    if m:
        t=datetime.datetime.strptime(m.group(1),'%Y-%m-%dT%H:%M:%S.%f').replace(tzinfo=datetime.timezone.utc).timestamp()
        if not re.search(r"connected|closing|open, 1 ledgers",m.group(4)): ev.append((t-t0,m.group(3),m.group(4)[:120]))
for l in open(c):
    m=re.match(r'\[\s*([\d.]+)s\].*max ([\d.]+) \|',l)
    if m and float(m.group(2))>15:
        s=float(m.group(1)); print('  interval ending %.0f s: max %s ms'%(s,m.group(2)))
        for t,mod,msg in ev:
            if s-2.5<=t<=s+0.5: print('     %.2f %s %s'%(t,mod,msg))
print('  server events:', len(ev), [ (round(t,1),m) for t,m,_ in ev][:30])
PY
rm -rf $D
