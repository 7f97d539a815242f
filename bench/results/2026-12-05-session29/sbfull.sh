#!/bin/bash
# storage-bench as issue 2 asks, the code before (sb-base, 2605dbe) and after (sb-final), alternating
for i in 1 2 3; do
  for b in sb-base sb-final; do
    rm -rf /var/tmp/sb && mkdir -p /var/tmp/sb && sync
    echo "== $b max rate, run $i $(date +%T)"
    timeout 300 ./$b --dir /var/tmp/sb --sizes 100,1024,65536 --seconds 5 2>&1
    rm -rf /var/tmp/sb && mkdir -p /var/tmp/sb && sync
    echo "== $b fixed 50000/s, run $i $(date +%T)"
    timeout 120 ./$b --dir /var/tmp/sb --sizes 1024 --seconds 10 --rate 50000 2>&1
  done
done
