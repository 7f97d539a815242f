#!/bin/bash
# efair2.sh BUILD OUT CONS: (e)'s load as efair.sh, but each topic's count read from one /metrics
# scrape (every topic at the same instant) at about 9 s and 14 s.
set -u
B=$1; out=$2; cons=$3
d=$(mktemp -d /var/tmp/qefair.XXXX)
$B/src/quire standalone --data-dir $d --bindAddress=127.0.0.1 --advertisedAddress=127.0.0.1 \
  --brokerServicePort=16650 --webServicePort=18080 --journalSyncData=true --logLevel=warn > $out.srv.log 2>&1 &
sp=$!
sleep 1
mode=produce; extra=""
if [ "$cons" = 1 ]; then
  mode=both; extra="--consumers-per-topic 2 --subscription-type Key_Shared --receiver-queue-size 1000"
fi
$B/tools/quire-perf $mode --service-url pulsar://127.0.0.1:16650 --topic-prefix e-x --num-topics 100 \
  --producers-per-topic 10 $extra --keys 1000 --batcher key-based --size 1024 --rate 0 \
  --max-pending 200 --seconds 20 --warmup-seconds 2 > $out.perf.txt 2>&1 &
pp=$!
sleep 8
for k in 1 2; do
  t0=$(date +%s.%N); curl -s localhost:18080/metrics > $out.m$k.txt; t1=$(date +%s.%N)
  echo "scrape $k: $t0 .. $t1" >> $out.times.txt; [ $k = 1 ] && sleep 5
done
wait $pp
grep VmHWM /proc/$sp/status > $out.hwm.txt
kill $sp; wait $sp
rm -rf $d
grep -E "produced|publish latency|consumed|end-to-end" $out.perf.txt
cat $out.times.txt $out.hwm.txt
python3 - "$out" <<'PY'
import re, statistics, sys
def counts(f):
    r = {}
    for l in open(f):
        m = re.match(r'pulsar_in_messages_total\{.*topic="persistent://public/default/e-x-(\d+)".*\} (\S+)', l)
        if m: r[int(m.group(1))] = float(m.group(2))
    return r
a, b = counts(sys.argv[1] + ".m1.txt"), counts(sys.argv[1] + ".m2.txt")
d = sorted((b[i] - a[i], i) for i in a if i in b)
print("topics %d; messages received per topic between the scrapes: min %d (topic %d), median %d, max %d (topic %d)"
      % (len(d), d[0][0], d[0][1], statistics.median(x for x, _ in d), d[-1][0], d[-1][1]))
PY
