#!/bin/bash
cd /work/main
for i in 1 2 3 4; do
  if [ $((i%2)) = 1 ]; then o="/tmp/p21/b0 /tmp/p21/q1"; else o="/tmp/p21/q1 /tmp/p21/b0"; fi
  for b in $o; do echo "R $(basename $b) $(date +%T): $(/tmp/p21/rrun.sh $b | tr '\n' ' ' | awk '{print $5, $6}')"; done
done
for i in 31 32 33 34; do
  if [ $((i%2)) = 1 ]; then o="/tmp/p21/b0 /tmp/p21/q1"; else o="/tmp/p21/q1 /tmp/p21/b0"; fi
  for b in $o; do /tmp/p21/frun.sh $b $(basename $b)-$i | sed 's/^/F /;s/fill_mb_per_s/fill/;s/catchup_mb_per_s/cu/;s/live_pub_//g'; done
done
for i in 1 2 3; do
  if [ $((i%2)) = 1 ]; then o="/tmp/p21/b0 /tmp/p21/q1"; else o="/tmp/p21/q1 /tmp/p21/b0"; fi
  for b in $o; do echo "A $(basename $b) $(date +%T): $(/tmp/p21/arun.sh $b 20 --managedLedgerCacheSizeMB=1 | grep -E "^  (produced|consumed)|disk_reads_total" | awk '{print $1, $5, $6, $NF}' | tr '\n' ' ')"; done
done
