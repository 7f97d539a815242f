#!/bin/bash
# (f) once, with CPU time per process/thread over the catch-up; PERFREC=1 adds perf record -a
. /work/main/bench/results/2026-12-05-session30/srv.sh
n=$(( 2000 * 1000000 / 1024 ))
quire_start ${1:-/work/main/build-bench/src/quire}
timeout 60 $PERF consume --service-url $U --topics f --subscription catchup --seconds 1 --warmup-seconds 0 --subscription-position Earliest > /dev/null 2>&1
timeout 600 $PERF produce --service-url $U --topics f --size 1024 --rate 0 --max-pending 10000 --messages $n --warmup-seconds 0 > /dev/null 2>&1
sync; sleep 2
timeout 600 $PERF produce --service-url $U --topics f --size 1024 --rate 50000 --max-pending 10000 --seconds 900 --warmup-seconds 0 > $d.live 2>&1 &
lp=$!
sleep 1
snap() { for p in $pid $lp $(pgrep -f 'receiver-queue-size 10000'); do for t in /proc/$p/task/*; do echo "$p $(basename $t) $(cat $t/comm 2>/dev/null | tr ' ' _) $(awk '{print $14+$15}' $t/stat 2>/dev/null)"; done; done; }
( sleep 0.3; snap > /tmp/s33/snap1; [ -n "$PERFREC" ] && perf record -a -g -o /tmp/s33/perf.data -- sleep 2 >/dev/null 2>&1; sleep ${SNAPS:-2}; snap > /tmp/s33/snap2 ) &
sp=$!
cons=$(timeout 600 $PERF consume --service-url $U --topics f --subscription catchup --messages $n --warmup-seconds 0 --receiver-queue-size 10000 --subscription-position Earliest 2>&1 | grep -E '^ *consumed' | tail -1)
wait $sp
kill -INT $lp; wait $lp
echo "catch-up $(echo $cons | awk '{print $6, "MB/s"}') live $(grep 'publish latency' $d.live | tail -1 | sed 's/.*p50/p50/; s/p95 [0-9.]* //; s/p99.99.*//')"
join -j 2 <(awk '{print $1"/"$2, $3, $4}' /tmp/s33/snap1 | sort) <(awk '{print $1"/"$2, $3, $4}' /tmp/s33/snap2 | sort) 2>/dev/null | head -0
python3 - <<'PY'
a={};b={}
for f,dct in (("/tmp/s33/snap1",a),("/tmp/s33/snap2",b)):
    for l in open(f):
        p,t,c,v=l.split(); dct[(p,t)]=(c,int(v))
for k in sorted(b):
    if k in a and b[k][1]-a[k][1]>0: print(k[0],k[1],b[k][0],b[k][1]-a[k][1],"ticks")
PY
rm -f $d.live
quire_stop
