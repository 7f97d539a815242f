#!/usr/bin/env bash
# Starts Apache Pulsar standalone (org.apache.pulsar.PulsarStandaloneStarter, jars
# from bench/pulsar/fetch.sh) on free 127.0.0.1 ports with a fresh data directory,
# waits until it serves (bounded), and prints the env for the compat suite:
#   eval "$(bench/pulsar/run-standalone.sh)"
#   QUIRE_COMPAT_TARGET=pulsar python3 -m pytest -q tests/compat
#   kill "$PULSAR_PID"
# Usage: run-standalone.sh [RUN_DIR]   (default: a new mktemp dir; log in RUN_DIR/pulsar.log)
# Env: PULSAR_CONF_IN (config template, default standalone.conf.in next to this script),
#      PULSAR_JVM_MEM (heap/direct memory flags, default "-Xms256m -Xmx1g -XX:MaxDirectMemorySize=1g").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dist=${PULSAR_DIST_DIR:-$root/tests/compat/.cache/pulsar-dist}
"$here/fetch.sh" >&2
run=${1:-$(mktemp -d /tmp/pulsar-standalone.XXXXXX)}
mkdir -p "$run"
read -r bport wport bkport sport < <(python3 - <<'PY'
import socket
socks = []
for _ in range(4):
    s = socket.socket(); s.bind(("127.0.0.1", 0)); socks.append(s)
print(*[s.getsockname()[1] for s in socks])
PY
)
sed -e "s|@BROKER_PORT@|$bport|" -e "s|@WEB_PORT@|$wport|" -e "s|@RUN_DIR@|$run|" \
  "${PULSAR_CONF_IN:-$here/standalone.conf.in}" >"$run/standalone.conf"
cd "$run"
# shellcheck disable=SC2086
java ${PULSAR_JVM_MEM:--Xms256m -Xmx1g -XX:MaxDirectMemorySize=1g} \
  -Dlog4j2.configurationFile="$here/log4j2.xml" \
  -Dio.netty.tryReflectionSetAccessible=true -Dpulsar.allocator.exit_on_oom=true \
  --add-opens java.base/java.io=ALL-UNNAMED --add-opens java.base/java.util.zip=ALL-UNNAMED \
  --add-opens java.base/sun.net=ALL-UNNAMED --add-opens java.management/sun.management=ALL-UNNAMED \
  --add-opens jdk.management/com.sun.management.internal=ALL-UNNAMED \
  --add-opens java.base/java.lang=ALL-UNNAMED --add-opens java.base/jdk.internal.platform=ALL-UNNAMED \
  --add-opens java.base/java.nio=ALL-UNNAMED --add-opens java.base/sun.nio.ch=ALL-UNNAMED \
  -cp "$dist/lib/*" org.apache.pulsar.PulsarStandaloneStarter \
  --config "$run/standalone.conf" --no-functions-worker --no-stream-storage \
  --bookkeeper-dir "$run/bookkeeper" --metadata-dir "$run/metadata" \
  --bookkeeper-port "$bkport" --stream-storage-port "$sport" --advertised-address 127.0.0.1 \
  >"$run/pulsar.log" 2>&1 </dev/null &
pid=$!
echo "$pid" >"$run/pid"
deadline=$((SECONDS + ${PULSAR_START_TIMEOUT:-180}))
until curl -sf -m 5 "http://127.0.0.1:$wport/admin/v2/namespaces/public" 2>/dev/null | grep -q default; do
  if ! kill -0 "$pid" 2>/dev/null || [ $SECONDS -ge $deadline ]; then
    echo "run-standalone: Pulsar did not come up; tail of $run/pulsar.log:" >&2
    tail -40 "$run/pulsar.log" >&2
    kill "$pid" 2>/dev/null || true
    exit 1
  fi
  sleep 1
done
echo "export PULSAR_SERVICE_URL=pulsar://127.0.0.1:$bport"
echo "export PULSAR_WEB_URL=http://127.0.0.1:$wport"
echo "export PULSAR_PID=$pid"
echo "export PULSAR_RUN_DIR=$run"
