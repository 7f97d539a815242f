#!/bin/bash
for i in 1 2; do
for v in "4 262144" "2 262144" "4 131072" "2 131072"; do
  set -- $v
  rm -rf /var/tmp/sb && mkdir -p /var/tmp/sb && sync
  echo "== PF=$1 WB=$2 run $i"
  QX_PF=$1 QX_WB=$2 timeout 120 ./sb-exp --dir /var/tmp/sb --sizes 1024 --seconds 10 --rate 50000 2>&1 | grep "fixed rate"
done; done
