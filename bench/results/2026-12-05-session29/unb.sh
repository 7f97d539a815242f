#!/bin/bash
# Unbatched 1-KiB messages at a fixed rate through the broker (each message its own
# entry, below 16 KiB: the path the flush copies), fresh server per run, builds alternating.
# usage: unb.sh PAIRS RATE bin_a bin_b
pairs=$1; rate=$2; shift 2
PERF=/work/main/build-bench/tools/quire-perf
for i in $(seq 1 $pairs); do
  for bin in "$@"; do
    d=$(mktemp -d /var/tmp/unb.XXXX); sync
    fp() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
    bp=$(fp); wp=$(fp)
    $bin standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
      --brokerServicePort=$bp --webServicePort=$wp --journalSyncData=true --logLevel=warn > $d.log 2>&1 &
    pid=$!
    for k in $(seq 1 200); do (exec 3<>/dev/tcp/127.0.0.1/$bp) 2>/dev/null && break; sleep 0.05; done
    echo "== $(basename $(dirname $(dirname $bin))) run $i $(date +%T)"
    timeout 120 $PERF both --service-url pulsar://127.0.0.1:$bp --topic-prefix u --num-topics 10 \
      --size 1024 --rate $rate --disable-batching --max-pending 1000 --seconds 20 --warmup-seconds 3 \
      --report-interval-s 5 2>&1 | grep -E "publish latency|end-to-end latency|^ *produced|prod .*msg/s" | tail -3
    kill $pid; wait $pid 2>/dev/null; rm -rf $d $d.log
  done
done
