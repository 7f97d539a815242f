#!/bin/bash
# ab2.sh: (c) and (d) alone on fresh servers, alternating the build before (d30cb3a, /tmp/exp without its env) and with spares
cd /tmp/p26
for i in 1 2 3 4; do
  ./cab.sh c-base /tmp/exp/build-bench
  ./cab.sh c-spare /work/main/build-bench
done
for i in 1 2 3; do
  ./dab.sh d-base /tmp/exp/build-bench
  ./dab.sh d-spare /work/main/build-bench
done
