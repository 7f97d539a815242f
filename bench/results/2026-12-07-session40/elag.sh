#!/bin/bash
# (e)'s consumers forced behind: subscriptions made first, (e)'s producers alone for
# $LAG s (a backlog well past the flush's kept 256 MiB), then producers and consumers
# together for 15 s. Prints what was consumed, how far behind the consumers ended, and
# what the device read meanwhile (/proc/diskstats). Usage: elag.sh BUILD OUT [LAG]
set -u
B=$1; out=$2; LAG=${3:-6}
d=$(mktemp -d /var/tmp/qelag.XXXX)
P=$B/tools/quire-perf
U=pulsar://127.0.0.1:16650
$B/src/quire standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=16650 --webServicePort=18080 --journalSyncData=true --logLevel=warn > $out.srv.log 2>&1 &
sp=$!
sleep 1
E="--topic-prefix e-lag --num-topics 100 --subscription-type Key_Shared --keys 1000 --batcher key-based --size 1024 --rate 0"
timeout 60 $P consume --service-url $U $E --consumers-per-topic 2 --seconds 1 --warmup-seconds 0 > $out.sub.txt 2>&1
timeout 60 $P produce --service-url $U $E --producers-per-topic 10 --max-pending 200 --seconds $LAG --warmup-seconds 0 > $out.pre.txt 2>&1
r0=$(awk '$3=="vda"{print $6}' /proc/diskstats)
timeout 90 $P both --service-url $U $E --producers-per-topic 10 --consumers-per-topic 2 --max-pending 200 \
  --receiver-queue-size 1000 --seconds 15 --warmup-seconds 0 --json $out.json > $out.both.txt 2>&1
r1=$(awk '$3=="vda"{print $6}' /proc/diskstats)
rss=$(awk '/VmHWM/{print $2/1024}' /proc/$sp/status)
kill $sp; wait $sp 2>/dev/null
rm -rf $d
{
pre=$(grep -E "produced" $out.pre.txt | tail -1)
echo "$(basename $out): backlog: $pre"
grep -E "produced|consumed|end-to-end" $out.both.txt | tail -3
echo "device read $(( (r1 - r0) / 2048 )) MB; server peak RSS ${rss} MB"
} | tee $out.txt
