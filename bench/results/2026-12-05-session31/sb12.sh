#!/bin/bash
# sb12.sh N: issue 2's latency target, storage-bench with 1-KiB adds at 50,000/s for 10 s,
# the bookie's defaults, N runs on a fresh directory each (the add latency line).
# As run this session: sb12.sh 12 > sb12.txt
SB=/work/main/build-bench/tools/storage-bench
for r in $(seq 1 $1); do
  d=$(mktemp -d /var/tmp/sb12.XXXX); sync; sleep 2
  echo "r$r: $($SB --dir $d --sizes 1024 --seconds 10 --rate 50000 2>&1 | grep -E 'add latency' | sed 's/^ *//')"
  rm -rf $d
done
