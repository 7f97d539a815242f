#!/bin/bash
# cu2.sh REPS MB: unbatched 1-KiB backlog of MB, then a consumer catches up (nothing else);
# /dev/shm/quire-base and /dev/shm/quire-runs alternating
PERF=/work/main/build-bench/tools/quire-perf
fp() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
n=$(( $2 * 1000000 / 1024 ))
for r in $(seq 1 $1); do
 for dn in base runs; do
   d=$(mktemp -d /var/tmp/cu.XXXX); sync; sleep 1
   bp=$(fp); wp=$(fp)
   /dev/shm/quire-$dn standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
     --brokerServicePort=$bp --webServicePort=$wp --journalSyncData=true --logLevel=warn > $d.log 2>&1 &
   pid=$!
   for k in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/$bp) 2>/dev/null && break; sleep 0.05; done
   U=pulsar://127.0.0.1:$bp
   timeout 60 $PERF consume --service-url $U --topics cu --subscription s --seconds 1 --warmup-seconds 0 --subscription-position Earliest > /dev/null 2>&1
   fill=$(timeout 600 $PERF produce --service-url $U --topics cu --size 1024 --rate 0 --disable-batching --max-pending 2000 --messages $n --warmup-seconds 0 2>&1 | grep -E '^ *produced' | tail -1)
   sync; sleep 3; [ -n "$DROP" ] && echo 1 > /proc/sys/vm/drop_caches
   cons=$(timeout 600 $PERF consume --service-url $U --topics cu --subscription s --messages $n --warmup-seconds 0 --receiver-queue-size 1000 --subscription-position Earliest 2>&1 | grep -E '^ *consumed' | tail -1)
   m=$(curl -s http://127.0.0.1:$wp/metrics | grep -E "^quire_bookie_disk_read(_entries|s)_total|^quire_bookie_read_cache_hits" | tr '\n' ' ')
   echo "r$r dn=$dn fill: $(echo $fill | awk '{print $4, "msg/s"}')  catch-up: $(echo $cons | awk '{print $4, "msg/s", $6, "MB/s"}')  rss $(ps -o rss= -p $pid) kB $m"
   kill $pid; wait $pid 2>/dev/null; rm -rf $d $d.log
 done
done
