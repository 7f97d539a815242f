#!/bin/bash
# elow.sh N: compare.py (a)-(e) beside Pulsar fsync N times; quire's /metrics scraped
# every second throughout (selected lines, with the wall time), to see what the server
# does while (e)'s warm-up is slow.
cd /work/main
for i in $(seq 1 $1); do
  out=/tmp/s41/elow$i
  python3 bench/compare.py --build build-bench --scenarios a,b,c,d,e --reps 1 --pulsar fsync --out $out > $out.out 2>&1 &
  cp=$!
  ( while kill -0 $cp 2>/dev/null; do
      wp=$(ss -ltnp 2>/dev/null | grep '"quire"' | awk '{print $4}' | sed 's/.*://' | sort -n | while read p; do curl -s -m 0.3 http://127.0.0.1:$p/metrics | grep -q '^bookie_SERVER_STATUS' && echo $p && break; done)
      if [ -n "$wp" ]; then
        t=$(date +%s.%N)
        curl -s -m 0.8 http://127.0.0.1:$wp/metrics | grep -E '^(quire_ml_cache|pulsar_ml_cache|bookkeeper_server_READ|quire_bookie_disk_read|quire_bookie_read_cache|bookie_read_cache|quire_ml_reads|quire_broker_publish_buffer|process_cpu|quire_bookie_gc|quire_broker_socket|quire_broker_write_queue|quire_bookie_flush|bookkeeper_server_ADD_ENTRY_count|quire_bookie_reads)' | sed "s/^/$t /" >> $out.metrics
      fi
      sleep 1
    done ) &
  wait $cp
  echo "elow$i done $(date +%T)"
done
