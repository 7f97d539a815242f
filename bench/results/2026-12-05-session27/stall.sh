#!/bin/bash
# stall.sh LABEL SECS: (c) for SECS s on a fresh server (default settings, log at info),
# 1-s reports, samp.py every 10 ms; prints the 1-s intervals whose max is above 15 ms, the
# server's log lines around them and corr.py's view of the machine then. Keeps LABEL-c.txt
# and LABEL-samp.txt in OUT (default /tmp/p27). TRACE: none (default; runs s*), block
# (b*), sched (ps*, hp*, x*), writeback (d*): a perf trace into /dev/shm/LABEL.perf
# (kept in memory: a trace written to the disk stalls the next run by its writeback).
# The runs of this session used one copy of this script per TRACE.
HERE=$(cd "$(dirname "$0")" && pwd); OUT=${OUT:-/tmp/p27}
LABEL=$1; SECS=${2:-60}
D=$(mktemp -d /work/quire-stall.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
${QBIN:-/work/main/build-bench/src/quire} standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=info $SARGS > $D/server.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$P; Q=/work/main/build-bench/tools/quire-perf
T0=$(date +%s.%N)
python3 $HERE/samp.py $D/samp.txt $((SECS+8)) &
SP=$!
case ${TRACE:-none} in
  block) perf record -q -e block:block_rq_issue -e block:block_rq_complete -a -o /dev/shm/$LABEL.perf -- sleep $((SECS+6)) > /dev/null 2>&1 & PP=$! ;;
  sched) perf sched record -a -o /dev/shm/$LABEL.perf -- sleep $((SECS+6)) > /dev/null 2>&1 & PP=$! ;;
  writeback) perf record -q -e writeback:writeback_dirty_folio -e writeback:writeback_single_inode -a -o /dev/shm/$LABEL.perf -- sleep $((SECS+6)) > /dev/null 2>&1 & PP=$! ;;
  *) PP= ;;
esac
timeout $((SECS+60)) $Q both --service-url $U --topics c-t --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 --seconds $SECS --warmup-seconds 3 --report-interval-s 1 > $D/c.txt 2>&1
kill $SP 2>/dev/null; [ -n "$PP" ] && wait $PP; kill $QP; for i in $(seq 100); do kill -0 $QP 2>/dev/null || break; sleep 0.1; done
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
python3 $HERE/corr.py $D/c.txt $D/samp.txt $T0
mkdir -p $OUT; cp $D/c.txt $OUT/$LABEL-c.txt; cp $D/samp.txt $OUT/$LABEL-samp.txt
find $D -printf "%i %s %p\n" > $OUT/$LABEL-files.txt; rm -rf $D
