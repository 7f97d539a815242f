#!/bin/bash
# usage: run.sh BUILD TAG GROUPS [PAR]
B=$1; T=$2; G=$3; PAR=${4:-1}
D=$(mktemp -d /tmp/g8/data.XXXX)
P=16670; W=16671
env $QENV $B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=warn > /tmp/g8/$T.log 2>&1 &
QP=$!
for i in $(seq 1 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.1; done
curl -s http://127.0.0.1:$W/metrics > /tmp/g8/$T.m0
snap() { for t in /proc/$QP/task/*; do echo "$(cat $t/comm) $(awk '{print $14+$15}' $t/stat)"; done; }
snap > /tmp/g8/$T.s0; t0=$(date +%s.%N)
if [ -n "$PERFREC" ]; then perf ${PERFCMD:-record} ${PERFOPT:--F 2999 -g} ${PERFTARGET:--p $QP} -o /tmp/g8/$T.perf.data > /dev/null 2>&1 & PRP=$!; fi
CT=0
for gi in $(seq 0 $((G-1))); do
  /usr/bin/time -f "%U %S" -a -o /tmp/g8/$T.client $B/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topic-prefix g-$gi --num-topics 1000 --subscription-position Earliest --rate 1000000 --messages 1000 --warmup-seconds 0 --disable-batching --size 100 --report-interval-s 60 --max-connections 1 > /tmp/g8/$T.perf.$gi 2>&1 &
  PIDS="$PIDS $!"
  if (( (gi+1) % PAR == 0 )); then wait $PIDS; PIDS=; fi
done
[ -n "$PIDS" ] && wait $PIDS
t1=$(date +%s.%N)
[ -n "$PRP" ] && kill -INT $PRP && sleep 1
snap > /tmp/g8/$T.s1
curl -s http://127.0.0.1:$W/metrics > /tmp/g8/$T.m1
echo "topics/s $(echo "$G*1000 / ($t1 - $t0)" | bc)  secs $(echo "$t1 - $t0" | bc)" > /tmp/g8/$T.res
join <(sort /tmp/g8/$T.s0 | awk '{a[$1]+=$2} END{for(k in a) print k, a[k]}' | sort) <(sort /tmp/g8/$T.s1 | awk '{a[$1]+=$2} END{for(k in a) print k, a[k]}' | sort) | awk '{d=$3-$2; if (d>0) print $1, d}' | sort -k2 -rn >> /tmp/g8/$T.res
awk '{u+=$1; s+=$2} END{print "client user", u, "sys", s}' /tmp/g8/$T.client >> /tmp/g8/$T.res
echo "rss_kb $(awk '/VmRSS/{print $2}' /proc/$QP/status)" >> /tmp/g8/$T.res
ts0=$(date +%s.%N); kill $QP; wait $QP; echo "shutdown_s $(echo "$(date +%s.%N) - $ts0" | bc)" >> /tmp/g8/$T.res
du -sh $D/* >> /tmp/g8/$T.res; rm -rf $D
cat /tmp/g8/$T.res
