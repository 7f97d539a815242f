#!/bin/bash
# fsched.sh BUILD LABEL [quire args]: (f) by hand (as session 19's fx.sh: fill 2 GB, live
# 50k msg/s for 14 s, catch-up starting 4 s in) and, for every thread of the server and
# of the live producer, CPU time and run-queue wait (/proc/PID/task/TID/schedstat) over
# the 3 s before the catch-up and over the catch-up.
BUILD=$1; LABEL=$2; shift 2
D=$(mktemp -d /tmp/quire-bench.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn "$@" > $D/server.log 2>&1 &
QP=$!
trap 'kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$P
Q=$BUILD/tools/quire-perf
snap() { for pid in "$@"; do for t in /proc/$pid/task/*; do echo "$pid $(cat $t/comm 2>/dev/null | tr ' ' _) ${t##*/} $(cat $t/schedstat 2>/dev/null)"; done; done; }
timeout 60 $Q consume --service-url $U --topics f-t --subscription catchup --seconds 1 --warmup-seconds 0 --subscription-position Earliest >/dev/null 2>&1
timeout 300 $Q produce --service-url $U --topics f-t --size 1024 --rate 0 --max-pending 10000 --messages 1953125 --warmup-seconds 0 > $D/fill.txt 2>&1
timeout 60 $Q produce --service-url $U --topics f-t --size 1024 --rate 50000 --max-pending 10000 --seconds 14 --warmup-seconds 0 --report-interval-s 1 > $D/live.txt 2>&1 &
LP=$!
sleep 1; LQ=$(pgrep -P $LP | head -1)
if [ -n "$RENICE" ]; then for t in /proc/$QP/task/*; do grep -q "$RENICE_MATCH" $t/comm && renice -n $RENICE -p ${t##*/} >/dev/null; done; fi
snap $QP $LQ > $D/s0; sleep 3; snap $QP $LQ > $D/s1
T1=$(date +%s.%N)
timeout 300 $Q consume --service-url $U --topics f-t --subscription catchup --messages 1953125 --warmup-seconds 0 --receiver-queue-size 10000 --subscription-position Earliest > $D/cu.txt 2>&1
snap $QP $LQ > $D/s2; T2=$(date +%s.%N)
wait $LP
echo "== $LABEL: catch-up $(python3 -c "print(round($T2-$T1,2))") s; $(grep -i 'MB/s' $D/cu.txt | tail -1)"
grep -E "^\[" $D/live.txt | awk '{printf "%s %s/%s/%s; ",$2,$14,$18,$26}'; echo; grep "publish latency" $D/live.txt
python3 - $D/s0 $D/s1 $D/s2 $(python3 -c "print($T2-$T1)") <<'PY'
import sys
def rd(f):
    d={}
    for l in open(f):
        p=l.split()
        if len(p)<6: continue
        d[(p[0],p[1],p[2])]=(int(p[3]),int(p[4]),int(p[5]))
    return d
a,b,c=rd(sys.argv[1]),rd(sys.argv[2]),rd(sys.argv[3]); dur=float(sys.argv[4])
agg={}
for k in c:
    pid,name,tid=k
    n=name if not name.startswith('quire-perf') else 'perf:'+name
    key=('srv' if k[0]==list(c)[0][0] else 'live')+':'+n
    for w,(x,y,s) in (('pre',(a,b,3.0)),('cu',(b,c,dur))):
        if k in x and k in y:
            e=agg.setdefault((key,w),[0,0,0,s]); 
            for i in range(3): e[i]+=y[k][i]-x[k][i]
print("%-28s %22s %22s"%("thread","pre: cpu%  wait ms/s","catch-up: cpu% wait ms/s"))
for key in sorted(set(k for k,_ in agg)):
    r=[]
    for w in ('pre','cu'):
        e=agg.get((key,w))
        r.append("%6.1f %8.2f %6d"%(e[0]/e[3]/1e7, e[1]/e[3]/1e6, e[2]/e[3]) if e else " "*22)
    print("%-28s %s  %s"%(key,r[0],r[1]))
PY
