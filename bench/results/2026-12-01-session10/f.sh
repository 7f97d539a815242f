#!/bin/bash
# f.sh BUILD TAG NICE [MB] : scenario (f) by hand; catch-up consumer at nice NICE
B=$1; TAG=$2; NICE=$3; MB=${4:-2000}
cd /work/main
D=$(mktemp -d /tmp/p10/qd.XXXX); P=$B/tools/quire-perf
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=warn $QARGS > /tmp/p10/q-$TAG.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$port; T=f-$TAG; N=$((MB*1000000/1024))
$P consume --service-url $U --topics $T --subscription catchup --seconds 1 --warmup-seconds 0 --subscription-position Earliest > /dev/null 2>&1
$P produce --service-url $U --topics $T --size 1024 --rate 0 --max-pending 10000 --messages $N --warmup-seconds 0 > /dev/null 2>&1
sleep ${DELAY:-0}
if [ -n "$RN" ]; then for t in /proc/$QP/task/*; do if grep -qE "$RNPAT" $t/comm; then renice -n $RN -p $(basename $t) >/dev/null; fi; done; fi
if [ -n "$SLICE" ]; then for t in /proc/$QP/task/*; do if grep -qE "$SLPAT" $t/comm; then /tmp/slice/setslice $SLICE $(basename $t) >/dev/null; fi; done; fi
c0=$(awk '{print $14+$15}' /proc/$QP/stat)
${LIVENICE:+nice -n $LIVENICE} $P produce --service-url $U --topics $T --size 1024 --rate 50000 --max-pending 10000 --seconds 900 --warmup-seconds 0 --json /tmp/p10/live-$TAG.json > /tmp/p10/live-$TAG.txt 2>&1 &
LP=$!
sleep 1
if [ -n "$SLICE" ] && [ -n "$SLLIVE" ]; then for t in /proc/$LP/task/*; do /tmp/slice/setslice $SLICE $(basename $t) >/dev/null; done; fi
grep " vda " /proc/diskstats > /tmp/p10/ds0; grep "^cpu " /proc/stat > /tmp/p10/cpu0; [ -n "$IH" ] && kill -USR2 $QP; t0=$(date +%s.%N); for t in /proc/$QP/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done > /tmp/p10/th0-$TAG
[ -n "$PERFTRACE" ] && timeout -s INT 1.5 perf trace -s -p $QP -e fdatasync,pwritev,pwrite64 -o /tmp/p10/trace-$TAG.txt > /dev/null 2>&1 &
[ -n "$PERFREC" ] && timeout -s INT 1.3 perf record ${PERFEV:--F 4999} -g -p $QP -o /tmp/p10/rec-$TAG.data > /dev/null 2>&1 &
[ -n "$PERFSCHED" ] && perf sched record -a -o /tmp/p10/sched-$TAG.data sleep 1.2 > /dev/null 2>&1 &
if [ "$NICE" = skip ]; then sleep ${SKIP_S:-1.3}; else nice -n $NICE $P consume --service-url $U --topics $T --subscription catchup --messages $N --warmup-seconds 0 --receiver-queue-size ${RQ:-10000} --subscription-position Earliest > /tmp/p10/cu-$TAG.txt 2>&1; fi
grep " vda " /proc/diskstats > /tmp/p10/ds1; grep "^cpu " /proc/stat > /tmp/p10/cpu1; [ -n "$IH" ] && kill -USR2 $QP; t1=$(date +%s.%N); for t in /proc/$QP/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done > /tmp/p10/th1-$TAG
kill -INT $LP; wait $LP
c1=$(awk '{print $14+$15}' /proc/$QP/stat)
kill $QP; wait $QP; rm -rf $D
echo "$TAG nice=$NICE catchup_s=$(echo "$t1-$t0"|bc) server_cpu_ticks=$((c1-c0))"
grep "consumed " /tmp/p10/cu-$TAG.txt | tail -n 1
grep "publish latency" /tmp/p10/live-$TAG.txt | tail -n 1
paste /tmp/p10/th0-$TAG /tmp/p10/th1-$TAG | awk '{d=$4-$2; if (d>0) printf "%s:%d ", $1, d} END {print ""}'
