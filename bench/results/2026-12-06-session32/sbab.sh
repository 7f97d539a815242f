#!/bin/bash
# sbab.sh N SECONDS LABEL:BIN...: storage-bench, 1-KiB adds at 50,000/s for SECONDS, the
# binaries given alternating, a fresh directory each; the add latency line and the
# block device's write count (sectors written) over the run.
n=$1 secs=$2; shift 2
dev=$(lsblk -no pkname $(df /var/tmp | tail -1 | awk '{print $1}') 2>/dev/null | head -1); [ -z "$dev" ] && dev=vda
for r in $(seq 1 $n); do
  for spec in "$@"; do
    d=$(mktemp -d /var/tmp/sbab.XXXX); sync; sleep 2
    w0=$(awk '{print $5, $7}' /sys/block/$dev/stat)
    out=$(${spec#*:} --dir $d --sizes 1024 --seconds $secs --rate 50000 2>&1)
    w1=$(awk '{print $5, $7}' /sys/block/$dev/stat)
    echo "r$r ${spec%%:*}: $(echo "$out" | grep -E 'add latency' | sed 's/^ *//') | writes $(echo $w0 $w1 | awk '{print $3-$1}') ms $(echo $w0 $w1 | awk '{print $4-$2}') | $(echo "$out" | grep "bookie:" | grep -oE "[0-9]+ journal fdatasyncs, mean [0-9]+ us") | $(echo "$out" | grep spares: | sed "s/^ *//") | jnl $(ls $d/*/journal/*.jnl 2>/dev/null | wc -l)"
    rm -rf $d
  done
done
