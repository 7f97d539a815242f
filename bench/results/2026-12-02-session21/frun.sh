#!/bin/bash
# frun.sh BUILD TAG [quire args]: (f) quire only, fresh server, one line
b=$1; t=$2; shift 2
qa=(); for x in "$@"; do qa+=(--quire-arg="$x"); done
python3 /work/main/bench/compare.py --build $b --scenarios f --reps 1 --pulsar none "${qa[@]}" --out /tmp/p21/f-$t > /tmp/p21/f-$t.log 2>&1
echo "$t $(date +%H:%M:%S): $(python3 -c "
import json;d=json.load(open('/tmp/p21/f-$t/results.json'))
r=d['results']['f']['quire'][0]
print(' '.join('%s=%s'%(k,r.get(k)) for k in ('fill_mb_per_s','catchup_mb_per_s','live_pub_p50_ms','live_pub_p99_ms','live_pub_p99.9_ms','server_rss_max_mb')))
" 2>&1 | tail -1)"
rm -rf /tmp/p21/f-$t /tmp/p21/f-$t.log
