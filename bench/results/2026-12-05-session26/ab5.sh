#!/bin/bash
# ab5.sh: burst.sh with spare files off and on (the kept design: zeroed only while idle), alternating
cd /tmp/p26
for i in 1 2 3; do
  SARGS=--spareFileZeroRateMB=0 ./burst.sh off /work/main/build-bench
  SARGS= ./burst.sh on /work/main/build-bench
done
