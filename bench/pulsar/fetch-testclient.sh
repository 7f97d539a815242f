#!/usr/bin/env bash
# Downloads Apache Pulsar's Java load generator, pulsar-perf
# (org.apache.pulsar:pulsar-testclient, see testclient-pom.xml for the versions), and
# its runtime dependencies from Maven Central, for bench/compare.py's cross-check of
# quire-perf. Idempotent. Run it with:
#   java -cp "$PULSAR_TESTCLIENT_DIR/lib/*" org.apache.pulsar.testclient.PulsarPerfTestTool produce ...
# (4.x has no PerformanceClient; PulsarPerfTestTool dispatches to PerformanceProducer,
# PerformanceConsumer, ... by sub-command.)
# Usage: bench/pulsar/fetch-testclient.sh   (env PULSAR_TESTCLIENT_DIR, default tests/compat/.cache/pulsar-testclient)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dist=${PULSAR_TESTCLIENT_DIR:-$root/tests/compat/.cache/pulsar-testclient}
repo=${PULSAR_M2_DIR:-$root/tests/compat/.cache/m2}
mkdir -p "$dist"
dist=$(cd "$dist" && pwd)
if [ -f "$dist/.complete" ]; then
  echo "fetch-testclient: $dist already complete"
  exit 0
fi
rm -rf "$dist/lib"
mvn -q -B -s "$here/settings.xml" -f "$here/testclient-pom.xml" -Dmaven.repo.local="$repo" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dist/lib"
ls "$dist/lib"/pulsar-testclient-*.jar >/dev/null
touch "$dist/.complete"
echo "fetch-testclient: $(ls "$dist/lib" | wc -l) jars in $dist/lib"
