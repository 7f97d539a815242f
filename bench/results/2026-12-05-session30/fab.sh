#!/bin/bash
# fab.sh REPS: scenario (f) as compare.py runs it (2 GB of 1-KiB messages batched 1 ms,
# then a catch-up consumer beside a live producer at 50,000 msg/s), fresh servers,
# /dev/shm/quire-base and /dev/shm/quire-runs alternating
PERF=/work/main/build-bench/tools/quire-perf
fp() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
n=$(( 2000 * 1000000 / 1024 ))
for r in $(seq 1 $1); do
 for b in base runs; do
   d=$(mktemp -d /var/tmp/fab.XXXX); sync; sleep 1
   bp=$(fp); wp=$(fp)
   /dev/shm/quire-$b standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
     --brokerServicePort=$bp --webServicePort=$wp --journalSyncData=true --logLevel=warn > $d.log 2>&1 &
   pid=$!
   for k in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/$bp) 2>/dev/null && break; sleep 0.05; done
   U=pulsar://127.0.0.1:$bp
   timeout 60 $PERF consume --service-url $U --topics f --subscription catchup --seconds 1 --warmup-seconds 0 --subscription-position Earliest > /dev/null 2>&1
   timeout 600 $PERF produce --service-url $U --topics f --size 1024 --rate 0 --max-pending 10000 --messages $n --warmup-seconds 0 > /dev/null 2>&1
   sync; sleep 2
   timeout 600 $PERF produce --service-url $U --topics f --size 1024 --rate 50000 --max-pending 10000 --seconds 900 --warmup-seconds 0 > /tmp/fab-live.txt 2>&1 &
   lp=$!
   sleep 1
   cons=$(timeout 600 $PERF consume --service-url $U --topics f --subscription catchup --messages $n --warmup-seconds 0 --receiver-queue-size 10000 --subscription-position Earliest 2>&1 | grep -E '^ *consumed' | tail -1)
   kill -INT $lp; wait $lp
   m=$(curl -s http://127.0.0.1:$wp/metrics | grep -E "^quire_bookie_disk_read(_entries|s)_total" | awk '{print $2}' | tr '\n' ' ')
   echo "r$r $b catch-up $(echo $cons | awk '{print $6, "MB/s"}') live $(grep 'publish latency' /tmp/fab-live.txt | tail -1 | sed 's/.*p50/p50/; s/p95 [0-9.]* //; s/p99.99.*//') reads(entries,ops) $m"
   kill $pid; wait $pid 2>/dev/null; rm -rf $d $d.log
 done
done
