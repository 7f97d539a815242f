#!/bin/bash
# ue.sh REPS TAG: (u) 20 s and (e) 20 s on fresh servers, /dev/shm/quire-exp with
# QDONTNEED=0 and =1 alternating
PERF=/work/main/build-bench/tools/quire-perf
fp() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
for r in $(seq 1 $1); do
 for dn in base runs; do
  for sc in e; do
   d=$(mktemp -d /var/tmp/ue.XXXX); sync; sleep 1
   bp=$(fp); wp=$(fp)
   /dev/shm/quire-$dn standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
     --brokerServicePort=$bp --webServicePort=$wp --journalSyncData=true --logLevel=warn > $d.log 2>&1 &
   pid=$!
   for k in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/$bp) 2>/dev/null && break; sleep 0.05; done
   if [ $sc = u ]; then
     args="--topic-prefix u --num-topics 10 --size 1024 --rate 20000 --disable-batching --max-pending 1000 --receiver-queue-size 1000"
   else
     args="--topic-prefix e --num-topics 100 --producers-per-topic 10 --consumers-per-topic 2 --subscription-type Key_Shared --keys 1000 --batcher key-based --size 1024 --rate 0 --max-pending 200 --receiver-queue-size 1000"
   fi
   out=$(timeout 120 $PERF both --service-url pulsar://127.0.0.1:$bp $args --seconds 20 --warmup-seconds 3 --report-interval-s 30 2>&1)
   echo "$2 r$r dn=$dn $sc: $(echo "$out" | grep -E '^ *produced' | tail -1 | awk '{print $4, "msg/s"}')  pub $(echo "$out" | grep 'publish latency' | tail -1 | sed 's/.*p50/p50/; s/p95 [0-9.]* //; s/p99.99.*//')"
   kill $pid; wait $pid 2>/dev/null; rm -rf $d $d.log
  done
 done
done
