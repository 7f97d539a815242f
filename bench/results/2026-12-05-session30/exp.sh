#!/bin/bash
# exp.sh TAG REPS: alternate configurations of /dev/shm/sb-exp (env overrides)
cd /tmp/p30
for r in $(seq 1 $2); do
for cfg in "base:QPACE10=40" "f15:QPACE10=15 QHURRY8=7 QPACEMIN=16" "f25:QPACE10=25 QHURRY8=6 QPACEMIN=16" "wb64:QWB=64"; do
  name=${cfg%%:*}; envs=${cfg#*:}
  rm -rf /tmp/sbd; sync; sleep 2
  (python3 samp.py /tmp/p30/$1-$name-$r.samp 16 &)
  env $envs /dev/shm/sb-exp --dir /tmp/sbd --sizes 1024 --seconds 10 --rate 50000 --timeline /tmp/p30/$1-$name-$r.csv 2>&1 | grep fixed | sed "s/^/$name $r: /"
  sleep 4
  python3 classify.py $1-$name-$r.csv $1-$name-$r.samp | sed "s/^/    /"
done; done
