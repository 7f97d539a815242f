#!/bin/bash
# crun.sh BUILD TAG [quire args]: (c) quire only on a fresh server, one repetition, one line
b=$1; t=$2; shift 2
qa=(); for x in "$@"; do qa+=(--quire-arg="$x"); done
python3 /work/main/bench/compare.py --build $b --scenarios ${SC:-c} --reps ${REPS:-1} --pulsar none "${qa[@]}" --out ${OUT:-/tmp}/c-$t > ${OUT:-/tmp}/c-$t.log 2>&1
echo "$t $(date +%H:%M:%S): $(python3 -c "
import json;d=json.load(open('${OUT:-/tmp}/c-$t/results.json'))
for sc,rs in sorted(d['results'].items()):
  for r in rs['quire']:
    print(sc, ' '.join('%s=%s'%(k,r.get(k)) for k in ('produce_mb_per_s','pub_p50_ms','pub_p99_ms','pub_p99.9_ms','e2e_p99_ms','server_cpu_pct','server_rss_max_mb','consume_msg_per_s','produce_msg_per_s')), end='; ')
" 2>&1 | tail -1)"
rm -rf ${OUT:-/tmp}/c-$t ${OUT:-/tmp}/c-$t.log
