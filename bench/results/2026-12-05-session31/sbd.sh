#!/bin/bash
# sbd.sh REPS: storage-bench, 1-KiB adds at 50,000/s for 10 s on a fresh directory each,
# the bookie's default (1-KiB entries journaled, then copied by the flush) and
# --large-entry-bytes 1 (every entry written once, to a direct log, with a 64-byte
# reference in the journal) alternating. Prints each run's latency and write lines.
# As run this session: sbd.sh 4 > sbd.txt
SB=/work/main/build-bench/tools/storage-bench
for r in $(seq 1 $1); do
  for mode in default direct; do
    d=$(mktemp -d /var/tmp/sbd.XXXX); sync; sleep 2
    extra=; [ $mode = direct ] && extra="--large-entry-bytes 1"
    out=$($SB --dir $d --sizes 1024 --seconds 10 --rate 50000 $extra 2>&1)
    echo "r$r $mode: $(echo "$out" | grep -E 'add latency' | sed 's/^ *//')"
    echo "   $(echo "$out" | grep -E 'bookie: ' | sed 's/^ *//')"
    rm -rf $d
  done
done
