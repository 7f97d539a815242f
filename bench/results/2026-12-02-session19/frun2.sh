#!/bin/bash
# frun2.sh BUILD TAG [quire args]: (f) quire only, one line of figures
b=$1; t=$2; shift 2
qa=(); for x in "$@"; do qa+=(--quire-arg="$x"); done
python3 /work/main/bench/compare.py --build $b --scenarios f --reps 1 --pulsar none "${qa[@]}" --out ${OUT:-/tmp}/f-$t > ${OUT:-/tmp}/f-$t.log 2>&1
echo "$t $(date +%H:%M:%S): $(python3 -c "
import json;d=json.load(open('${OUT:-/tmp}/f-$t/results.json'));r=d['results']['f']['quire']
r=r[0] if isinstance(r,list) else r
print(' '.join('%s=%s'%(k,r.get(k)) for k in ('fill_mb_per_s','catchup_mb_per_s','live_pub_p50_ms','live_pub_p99_ms','live_pub_p99.9_ms','server_cpu_pct','server_rss_max_mb')))" 2>&1 | tail -1)"
rm -rf ${OUT:-/tmp}/f-$t
