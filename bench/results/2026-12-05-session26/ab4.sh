#!/bin/bash
# ab4.sh: (c) on fresh servers, the same build with spares off and on (adaptive pace), alternating
cd /tmp/p26
for i in 1 2 3 4; do
  SARGS=--spareFileZeroRateMB=0 ./cab.sh c-off /work/main/build-bench
  ./cab.sh c-on /work/main/build-bench
done
