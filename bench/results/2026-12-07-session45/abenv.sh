#!/bin/bash
# abenv.sh OUT PAIRS: (c),(f) Quire only, one build, without (base) and with (v) env QUIRE_PROBE_NOJSYNC, alternating
out=$1; pairs=$2; B=${B:-/tmp/s45/bp}
mkdir -p $out; cd /work/main
run() { env $2 python3 bench/compare.py --build $B --scenarios ${SCEN:-c,f} --reps 1 --pulsar none --out $out/$1 > $out/$1.log 2>&1; rm -rf /tmp/quire-bench.*; }
for i in $(seq 1 $pairs); do
  if [ $((i % 2)) = 1 ]; then run base-$i X=1; run v-$i QUIRE_PROBE_NOJSYNC=1; else run v-$i QUIRE_PROBE_NOJSYNC=1; run base-$i X=1; fi
done
echo done > $out/DONE
