#!/bin/bash
# dstat.sh SECS: per-second vda reads/writes: MB/s, IOs/s, avg KB, avg in flight
prev=($(awk '$3=="vda"{print $4,$6,$8,$10,$14}' /proc/diskstats))
for i in $(seq 1 $1); do sleep 1; cur=($(awk '$3=="vda"{print $4,$6,$8,$10,$14}' /proc/diskstats));
r=$((cur[0]-prev[0])); rs=$((cur[1]-prev[1])); w=$((cur[2]-prev[2])); ws=$((cur[3]-prev[3])); tiq=$((cur[4]-prev[4]))
printf "%2d r %4d MB/s %5d io %4d KB | w %4d MB/s %5d io %4d KB | wq %d ms\n" $i $((rs/2048)) $r $(( r ? rs/2/r : 0 )) $((ws/2048)) $w $(( w ? ws/2/w : 0 )) $tiq
prev=(${cur[@]}); done
