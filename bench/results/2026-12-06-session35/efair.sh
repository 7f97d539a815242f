#!/bin/bash
# efair.sh BUILD OUT CONS: scenario (e)'s load (100 topics x 10 producers, keyed 1 KiB at the
# maximum rate, key-based batches) against a fresh quire standalone for 25 s, with (CONS=1) or
# without its two Key_Shared consumers per topic. At about 13 s and 18 s every topic's stats
# (OUT.stats.jsonl, OUT.stats2.jsonl), then its internal stats (OUT.istats.jsonl); prints the
# spread of the topics' messages received between the two.
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
  --max-pending 200 --seconds 25 --warmup-seconds 2 > $out.perf.txt 2>&1 &
pp=$!
stats() { for i in $(seq 0 99); do curl -s "localhost:18080/admin/v2/persistent/public/default/e-x-$i/$1"; echo; done; }
sleep 12; stats stats > $out.stats.jsonl
sleep 5; stats stats > $out.stats2.jsonl
sleep 3; stats internalStats > $out.istats.jsonl
wait $pp
kill $sp; wait $sp
rm -rf $d
grep -E "produced|publish latency|consumed|end-to-end" $out.perf.txt
python3 - "$out" <<'PY'
import json, statistics, sys
def counts(f):
    return [json.loads(l).get("msgInCounter", 0) for l in open(f) if l.strip()]
a, b = counts(sys.argv[1] + ".stats.jsonl"), counts(sys.argv[1] + ".stats2.jsonl")
d = sorted((y - x, i) for i, (x, y) in enumerate(zip(a, b)))
print("messages received per topic between the samples: min %d (topic %d), median %d, max %d (topic %d)"
      % (d[0][0], d[0][1], statistics.median(x for x, _ in d), d[-1][0], d[-1][1]))
PY
