#!/bin/bash
# (a), (b), (c), (e), (f) beside Pulsar fsync: new (aged cached entries a cursor has yet to read
# kept up to 5 more periods, and added entries cached for an active cursor up to the cache's size behind: PIP-430) against base (HEAD 18e4437e: evicted at 1 s),
# alternating, the order swapped each pair; quire's /metrics scraped every second
# (cache evictions by reason, extensions, misses) for what (e)'s start reads.
cd /work/main
scrape() { # $1: compare.py's pid, $2: output
  while kill -0 $1 2>/dev/null; do
    wp=$(ss -ltnp 2>/dev/null | grep '"quire"' | awk '{print $4}' | sed 's/.*://' | sort -n | while read p; do curl -s -m 0.3 http://127.0.0.1:$p/metrics | grep -q '^bookie_SERVER_STATUS' && echo $p && break; done)
    if [ -n "$wp" ]; then
      t=$(date +%s.%N)
      curl -s -m 0.8 http://127.0.0.1:$wp/metrics | grep -E '^(quire_ml_cache|pulsar_ml_cache|bookkeeper_server_READ|quire_bookie_disk_read|process_cpu)' | sed "s/^/$t /" >> $2
    fi
    sleep 1
  done
}
for i in $(seq 1 $1); do
  if [ $((i % 2)) = 1 ]; then order="new base"; else order="base new"; fi
  for v in $order; do
    if [ $v = base ]; then B=/work/main/build-bench; else B=/tmp/s41/build-new; fi
    out=/tmp/s41/ab2-$v-$i
    python3 bench/compare.py --build $B --scenarios a,b,c,e,f --reps 1 --pulsar fsync --out $out > $out.log 2>&1 &
    cp=$!
    scrape $cp $out.metrics &
    wait $cp
    rm -f $out/server-pulsar-*.log
    echo "ab2-$v-$i done $(date +%T)"
  done
done
echo finished
