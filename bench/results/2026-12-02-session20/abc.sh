#!/bin/bash
# abc.sh BUILD LABEL [quire args]: (a), (b), then (c) on one fresh server, as compare.py runs
# them (10 s + 3 s warm-up each, same quire-perf options); during (c), every 0.25 s: the
# journal's and the direct log's syncs (count, ms), GC counters, the disk's completed
# writes/reads and I/O pressure; then (c)'s 1-s reports (p50/p99/p99.9/max) beside them.
BUILD=$1; LABEL=$2; shift 2
D=$(mktemp -d /tmp/quire-bench.XXXX)
P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$BUILD/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=info "$@" > $D/server.log 2>&1 &
QP=$!
trap 'kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$P; Q=$BUILD/tools/quire-perf
C="--seconds 10 --warmup-seconds 3"
$Q both --service-url $U --topics a-t --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 $C > $D/a.txt 2>&1
$Q both --service-url $U --topics b-t --size 100 --rate 0 --batch-max-delay-ms 1 --max-pending 50000 --receiver-queue-size 50000 $C > $D/b.txt 2>&1
$Q both --service-url $U --topics c-t --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000 $C --report-interval-s 1 > $D/c.txt 2>&1 &
CP=$!
T0=$(date +%s.%N)
while kill -0 $CP 2>/dev/null; do
  echo "$(date +%s.%N) $(curl -s -m 1 http://127.0.0.1:$W/metrics | awk '/^bookie_journal_JOURNAL_SYNC_(count|sum)/ {printf "%s ", $2} /^quire_bookie_gc_(passes_total|logs_removed_total|logs_freeing)/ {printf "%s ", $2}') $(awk '$3=="vda" {print $4, $8, $10}' /proc/diskstats) $(awk '/^Dirty:/ {d=$2} /^Writeback:/ {w=$2} END {print d, w}' /proc/meminfo) $(awk '/^some/ {print $2}' /proc/pressure/io)"
  sleep 0.25
done > $D/m.txt
wait $CP; cp $D/c.txt /tmp/p20/abc-$LABEL-c.txt; cp $D/m.txt /tmp/p20/abc-$LABEL-m.txt
echo "== $LABEL $(date +%T): a $(grep 'produced ' $D/a.txt | tail -1 | awk '{print $6, $7}'), b $(grep 'produced ' $D/b.txt | tail -1 | awk '{print $4, $5}'); c: $(grep 'publish latency' $D/c.txt | tail -1)"
grep -E "^\[" $D/c.txt | grep prod | awk '{printf "%s p50 %s p99 %s p99.9 %s max %s\n",$2,$14,$18,$20,$26}' | head -14
python3 - $D/m.txt $T0 <<'PY'
import sys
rows=[l.split() for l in open(sys.argv[1]) if len(l.split())>=12]
t0=float(sys.argv[2]); prev=None
# t syncs_count syncs_sum gc_passes gc_removed gc_freeing reads writes psi
for r in rows:
    t=float(r[0]); v=[float(x) for x in r[1:6]]; rd,wr,sw=int(r[6]),int(r[7]),int(r[8]); dirty,wb=int(r[9]),int(r[10]); psi=r[11]
    if prev:
        dt=t-prev[0]; ds=v[0]-prev[1][0]; dms=v[1]-prev[1][1]
        print("%6.2f syncs %4d avg %.2f ms | gc passes %d removed %d freeing %d | disk r %d w %d, %.1f MB | dirty %d MB wb %d MB | psi %s" % (t-t0, ds, dms/ds if ds else 0, v[2], v[3], v[4], rd-prev[2], wr-prev[3], (sw-prev[4])/2048, dirty/1024, wb/1024, psi))
    prev=(t,v,rd,wr,sw)
PY
grep -iE "gc|trim|roll|ledger" $D/server.log | tail -8
