#!/bin/bash
# ab3.sh: (c) for 60 s on fresh servers, alternating d30cb3a and spares (128 MiB/s)
cd /tmp/p26; export SECS=60
for i in 1 2; do
  ./cab.sh c60-base /tmp/exp/build-bench
  ./cab.sh c60-spare /work/main/build-bench
done
