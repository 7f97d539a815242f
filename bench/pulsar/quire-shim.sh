#!/usr/bin/env bash
# Stand-in for the quire binary that runs Apache Pulsar standalone instead, so the
# compat suite's own fixture (start on chosen ports, kill -9, restart on the same
# data dir) can be exercised against the real broker:
#   QUIRE_BIN=bench/pulsar/quire-shim.sh QUIRE_COMPAT_START_TIMEOUT=90 \
#     python3 -m pytest -q tests/compat/test_durability.py
# Accepts: standalone --data-dir DIR --brokerServicePort=P --webServicePort=W
#          --bindAddress=A --advertisedAddress=A. Runs in the foreground (exec java).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dist=${PULSAR_DIST_DIR:-$root/tests/compat/.cache/pulsar-dist}
[ "${1:-}" = standalone ] || { echo "quire-shim: only 'standalone'" >&2; exit 2; }
shift
data="" bport="" wport=""
while [ $# -gt 0 ]; do
  case "$1" in
    --data-dir) data=$2; shift ;;
    --data-dir=*) data=${1#*=} ;;
    --brokerServicePort=*) bport=${1#*=} ;;
    --webServicePort=*) wport=${1#*=} ;;
    *) ;;
  esac
  shift
done
[ -n "$data" ] && [ -n "$bport" ] && [ -n "$wport" ] || { echo "quire-shim: missing args" >&2; exit 2; }
mkdir -p "$data"
# The bookie port must stay the same across restarts (the bookie id is host:port).
if [ ! -f "$data/bkport" ]; then
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])' >"$data/bkport"
fi
bkport=$(cat "$data/bkport")
sport=$((bkport + 1000 > 65000 ? bkport - 1000 : bkport + 1000))
sed -e "s|@BROKER_PORT@|$bport|" -e "s|@WEB_PORT@|$wport|" -e "s|@RUN_DIR@|$data|" \
  "$here/standalone.conf.in" >"$data/standalone.conf"
cd "$data"
exec java -Xms256m -Xmx1g -XX:MaxDirectMemorySize=1g \
  -Dlog4j2.configurationFile="$here/log4j2.xml" \
  -Dio.netty.tryReflectionSetAccessible=true -Dpulsar.allocator.exit_on_oom=true \
  --add-opens java.base/java.io=ALL-UNNAMED --add-opens java.base/java.util.zip=ALL-UNNAMED \
  --add-opens java.base/sun.net=ALL-UNNAMED --add-opens java.management/sun.management=ALL-UNNAMED \
  --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
  --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/jdk.internal.platform=ALL-UNNAMED \
  --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  -cp "$dist/lib/*" org.apache.pulsar.PulsarStandaloneStarter \
  --config "$data/standalone.conf" --no-functions-worker --no-stream-storage \
  --bookkeeper-dir "$data/bookkeeper" --metadata-dir "$data/metadata" \
  --bookkeeper-port "$bkport" --stream-storage-port "$sport" --advertised-address 127.0.0.1
