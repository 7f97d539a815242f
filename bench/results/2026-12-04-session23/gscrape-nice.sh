#!/bin/bash
# gscrape-nice.sh: gscrape.sh (session 22) with NICE=n: the metrics-0 thread reniced to n before the run
# gstall.sh BUILD N [quire args]: a fresh server, N x 1000 topics as (g), then 1 KB at 20,000 msg/s for 30 s
# on one more topic with 1-s reports (pub max per second), optionally perf record of the server ($PERF)
B=$1; N=$2; shift 2
D=$(mktemp -d /tmp/quire-bench.XXXX); P=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])'); W=$(python3 -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1])')
$B/src/quire standalone --data-dir $D/data --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$P --webServicePort=$W --journalSyncData=true --logLevel=info "$@" > $D/s.log 2>&1 & QP=$!
trap 'kill $QP 2>/dev/null; wait $QP; rm -rf $D' EXIT
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$P) 2>/dev/null && break; sleep 0.05; done
for g in $(seq $N); do $B/tools/quire-perf both --service-url pulsar://127.0.0.1:$P --topic-prefix g-x-$g --num-topics 1000 --subscription-position Earliest --rate 1000000 --messages 1000 --messages-per-producer 1 --warmup-seconds 0 --disable-batching --size 100 --report-interval-s 60 --max-connections 1 > /dev/null 2>&1 || echo fail; done
sleep 2; if [ -n "$NICE" ]; then for t in /proc/$QP/task/*; do [ "$(cat $t/comm)" = metrics-0 ] && renice -n $NICE -p $(basename $t) > /dev/null; done; fi
if [ -n "$PERF" ]; then perf record $PERF -p $QP -o /tmp/p22/gscrape.perf 2>/dev/null & PF=$!; sleep 0.5; fi
( for k in 1 2 3 4 5; do sleep 5; /usr/bin/time -f "scrape %e s" curl -s -o /dev/null http://127.0.0.1:$W/metrics; done ) & SC=$!
$B/tools/quire-perf produce --service-url pulsar://127.0.0.1:$P --topics x-t --size 1024 --rate 20000 --batch-max-delay-ms 1 --seconds 30 --warmup-seconds 0 --report-interval-s 1 > $D/x.txt 2>&1
[ -n "$PERF" ] && kill -INT $PF && wait $PF
wait $SC
grep -E "^\[" $D/x.txt | awk '{for(i=1;i<=NF;i++) if($i=="max") {printf "%s ", $(i+1); break}} END {print ""}'
grep "publish latency" $D/x.txt | tail -1
cp $D/s.log /tmp/p22/gstall-server.log
