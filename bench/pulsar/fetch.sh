#!/usr/bin/env bash
# Downloads Apache Pulsar's broker (org.apache.pulsar:pulsar-broker, see pom.xml for
# the version) and all its runtime dependencies from Maven Central into a cache
# directory, for bench/pulsar/run-standalone.sh. Idempotent: does nothing when the
# jars are already there. Also installs matplotlib (for compare.py's plots) when
# python3 lacks it.
# Usage: bench/pulsar/fetch.sh    (env PULSAR_DIST_DIR, default tests/compat/.cache/pulsar-dist)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dist=${PULSAR_DIST_DIR:-$root/tests/compat/.cache/pulsar-dist}
repo=${PULSAR_M2_DIR:-$root/tests/compat/.cache/m2}
mkdir -p "$dist"
# compare.py draws its latency plots with matplotlib (PyPI; Debian's
# python3-matplotlib serves only Debian's own python3).
if ! python3 -c 'import matplotlib' 2>/dev/null; then
  python3 -m pip install --quiet matplotlib ||
    echo "fetch: matplotlib not installed: compare.py will make no plots" >&2
fi
if [ -f "$dist/.complete" ]; then
  echo "fetch: $dist already complete"
  exit 0
fi
rm -rf "$dist/lib"
mvn -q -B -s "$here/settings.xml" -f "$here/pom.xml" -Dmaven.repo.local="$repo" \
  dependency:copy-dependencies -DincludeScope=runtime -DoutputDirectory="$dist/lib"
ls "$dist/lib"/pulsar-broker-*.jar >/dev/null
touch "$dist/.complete"
echo "fetch: $(ls "$dist/lib" | wc -l) jars in $dist/lib"
