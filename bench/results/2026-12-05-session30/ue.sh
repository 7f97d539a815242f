#!/bin/bash
# ue.sh REPS TAG "SCENARIOS" LABEL:CMD...: scenarios (u) and/or (e) for 20 s each on a
# fresh server, the servers given alternating. As run this session:
#   dontneed-ue.txt: ue.sh 1 quiet "u e" "dn=0:env QDONTNEED=0 /dev/shm/quire-exp" \
#                      "dn=1:env QDONTNEED=1 /dev/shm/quire-exp"   (and hog, hog2, quiet2)
#   e-ab.txt:        ue.sh 3 eab e dn=base:/dev/shm/quire-base dn=runs:/dev/shm/quire-runs
. "$(dirname "$0")/srv.sh"
reps=$1 tag=$2 scenarios=$3; shift 3
for r in $(seq 1 $reps); do
  for spec in "$@"; do
    for sc in $scenarios; do
      quire_start ${spec#*:}
      if [ $sc = u ]; then
        args="--topic-prefix u --num-topics 10 --size 1024 --rate 20000 --disable-batching --max-pending 1000 --receiver-queue-size 1000"
      else
        args="--topic-prefix e --num-topics 100 --producers-per-topic 10 --consumers-per-topic 2 --subscription-type Key_Shared --keys 1000 --batcher key-based --size 1024 --rate 0 --max-pending 200 --receiver-queue-size 1000"
      fi
      out=$(timeout 120 $PERF both --service-url $U $args --seconds 20 --warmup-seconds 3 --report-interval-s 30 2>&1)
      echo "$tag r$r ${spec%%:*} $sc: $(echo "$out" | grep -E '^ *produced' | tail -1 | awk '{print $4, "msg/s"}')  pub $(echo "$out" | grep 'publish latency' | tail -1 | sed 's/.*p50/p50/; s/p95 [0-9.]* //; s/p99.99.*//')"
      quire_stop
    done
  done
done
