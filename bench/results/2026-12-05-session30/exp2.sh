#!/bin/bash
cd /tmp/p30
for r in $(seq 1 $2); do
for cfg in "base:QX=0" "idle:QFLUSHPRIO=99" "nice19:QFLUSHPRIO=19"; do
  name=${cfg%%:*}; envs=${cfg#*:}
  rm -rf /tmp/sbd; sync; sleep 2
  (python3 samp.py /tmp/p30/$1-$name-$r.samp 16 &)
  env $envs /dev/shm/sb-exp2 --dir /tmp/sbd --sizes 1024 --seconds 10 --rate 50000 --timeline /tmp/p30/$1-$name-$r.csv 2>&1 | grep -E "fixed|SCHED|setprio" | sed "s/^/$name $r: /"
  sleep 4
  python3 classify.py $1-$name-$r.csv $1-$name-$r.samp | sed "s/^/    /"
done; done
