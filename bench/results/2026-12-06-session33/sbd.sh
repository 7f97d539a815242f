#!/bin/bash
# storage-bench, 52,000-byte adds at 1,000/s for 20 s (the size and rate of (c)'s entries), the two builds alternating
for r in 1 2 3; do
  for spec in alloc:/work/main/build-bench base:/tmp/s33/wt/build-bench; do
    d=$(mktemp -d /var/tmp/sbd.XXXX); sync; sleep 1
    echo "== $r ${spec%%:*}"
    ${spec#*:}/tools/storage-bench --dir $d --sizes 52000 --seconds 20 --rate 1000 2>&1 | grep -E "p99|adds/s|sync|late" | head -8
    rm -rf $d
  done
done
