#!/bin/bash
# emem.sh (session 12's, output under /tmp/p20, with the bookie's cache gauges of session 20) BUILD TAG SEQ... : like cvm.sh (a, b, c, d, e), and while each runs, samples every
# 0.5 s the server's RSS and its memory gauges from /metrics (entry cache bytes, publish
# buffer, write queues to clients); prints per run the maxima (samples in TAG-i-mem.txt)
# and the bk-journal thread's CPU ticks; QARGS: more server options; QWRAP: a command to run the
# server under (heaptrack)
# BUSY=n: n busy loops for the first 8 s of each (e) run (brings on the slow mode);
# EBATCH: more options for (e) (e.g. "--batcher key-based");
# HEAPAT=s: s seconds into each (e) run, glibc's malloc_stats() through gdb (into the server's log)
B=$1; TAG=$2; shift 2
cd /work/main
D=$(mktemp -d /tmp/p20/qd.XXXX); P=$B/tools/quire-perf
read -r port wport < <(python3 -c 'import socket
s=[socket.socket() for _ in range(2)]
[x.bind(("127.0.0.1",0)) for x in s]; print(*[x.getsockname()[1] for x in s])')
$QWRAP $B/src/quire standalone --data-dir $D --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 --brokerServicePort=$port --webServicePort=$wport --journalSyncData=true --logLevel=${QLOG:-warn} $QARGS > /tmp/p20/q-$TAG.log 2>&1 &
QP=$!
for i in $(seq 100); do (echo > /dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.05; done
U=pulsar://127.0.0.1:$port; i=0
sample() { # t rss_mb cache_mb pubbuf_mb wq_mb heap_in_use_mb heap_free_mb
  m=$(curl -s -m 2 http://127.0.0.1:$wport/metrics)
  echo "$(date +%T.%N | cut -c1-10) $(awk '/VmRSS/ {printf "%.0f", $2/1024}' /proc/$QP/status) $(echo "$m" | awk '/^pulsar_ml_cache_used_size/ {s+=$2} /^quire_broker_publish_buffer_bytes/ {p+=$2} /^quire_broker_write_queue_bytes/ {w+=$2} /^quire_process_heap_bytes.*state="in_use"/ {h=$2} /^quire_process_heap_bytes.*state="free"/ {hf=$2} /^quire_bookie_write_cache_bytes/ {wc=$2} /^quire_bookie_read_cache_bytes/ {rc=$2} /^quire_bookie_reads_inflight_bytes/ {ri=$2} /^quire_ml_reads_inflight_bytes/ {mr+=$2} END {printf "%.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f %.0f", s/1048576, p/1048576, w/1048576, h/1048576, hf/1048576, wc/1048576, rc/1048576, ri/1048576, mr/1048576}')"
}
for s in "$@"; do
  i=$((i+1))
  case $s in
    a) args="--topics a-$TAG-$i --size 1024 --rate 0 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000";;
    b) args="--topics b-$TAG-$i --size 100 --rate 0 --batch-max-delay-ms 1 --max-pending 50000 --receiver-queue-size 50000";;
    c) args="--topics c-$TAG-$i --size 1024 --rate 50000 --batch-max-delay-ms 1 --max-pending 10000 --receiver-queue-size 10000";;
    d) args="--topics d-$TAG-$i --size 1024 --rate 0 --disable-batching --max-pending 1";;
    e) args="--topic-prefix e-$TAG-$i --num-topics 100 --producers-per-topic 10 --consumers-per-topic 2 --subscription-type Key_Shared --keys 1000 --size 1024 --rate 0 --max-pending 200 --receiver-queue-size 1000 $EBATCH";;
  esac
  jt() { for t in /proc/$QP/task/*; do [ "$(cat $t/comm)" = bk-journal ] && awk '{print $14+$15}' $t/stat; done; }
  j0=$(jt)
  $P both --service-url $U $args --seconds 10 --warmup-seconds 3 --report-interval-s 5 --op-timeout-s 60 > /tmp/p20/$TAG-$i-$s.txt 2>&1 &
  PP=$!
  if [ "$s" = e ] && [ -n "$BUSY" ]; then for k in $(seq $BUSY); do timeout 8 sh -c 'while :; do :; done' & done; fi
  if [ "$s" = e ] && [ -n "$HEAPAT" ]; then (sleep $HEAPAT; gdb -p $QP -batch -ex 'call (void)malloc_stats()' > /dev/null 2>&1) 2>> /tmp/p20/q-$TAG.log & fi
  while kill -0 $PP 2>/dev/null; do sample; sleep 0.5; done > /tmp/p20/$TAG-$i-mem.txt
  wait $PP
  echo "$(date +%T) $TAG $i $s $(grep 'produced ' /tmp/p20/$TAG-$i-$s.txt | tail -n1 | awk '{print $4}') msg/s cons $(grep 'consumed ' /tmp/p20/$TAG-$i-$s.txt | tail -n1 | awk '{print $4}') | $(grep -o 'drain timed out.*' /tmp/p20/$TAG-$i-$s.txt) | max rss/cache/pubbuf/wq/heap-in-use/heap-free/bk-wcache/bk-rcache/bk-reads MB: $(awk 'BEGIN {a=b=c=d=e=g=x=y=z=0} {if ($2>a) a=$2; if ($3>b) b=$3; if ($4>c) c=$4; if ($5>d) d=$5; if ($6>e) e=$6; if ($7>g) g=$7; if ($8>x) x=$8; if ($9>y) y=$9; if ($10>z) z=$10} END {print a, b, c, d, e, g, x, y, z}' /tmp/p20/$TAG-$i-mem.txt) | VmHWM $(awk '/VmHWM/ {printf "%.0f", $2/1024}' /proc/$QP/status) | bk-journal cpu $(( $(jt) - j0 )) ticks"
done
kill $QP; wait $QP; rm -rf $D
