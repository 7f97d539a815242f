#!/bin/bash
# usage: ab.sh N binA binB ... : alternates, prints the fixed-rate line and bookie line
n=$1; shift
for i in $(seq 1 $n); do
  for b in "$@"; do
    rm -rf /var/tmp/sb && mkdir -p /var/tmp/sb && sync
    echo "== $(basename $b) run $i $(date +%T)"
    timeout 120 $b --dir /var/tmp/sb --sizes 1024 --seconds 10 --rate 50000 2>&1 | grep -E "fixed rate|bookie: [0-9]|disk:" | sed 's/^ *//'
  done
done
