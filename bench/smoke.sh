#!/usr/bin/env bash
# CI smoke of the load generator against Quire (a few seconds): starts
# `quire standalone` on free 127.0.0.1 ports with a fresh data directory, runs
# `quire-perf both` (1 topic, 1 KiB, 5,000 msg/s, 3 s), checks that messages flowed
# (produced > 0, consumed == produced, no send or checksum errors), stops Quire.
# Exit status 0 on success, 1 on failure (with the reason and the tail of the logs).
# Usage: bench/smoke.sh [BUILD_DIR]   (default build; env QUIRE_BIN, QUIRE_PERF_BIN)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build}
quire=${QUIRE_BIN:-$build/src/quire}
perf=${QUIRE_PERF_BIN:-$build/tools/quire-perf}
for b in "$quire" "$perf"; do
  [ -x "$b" ] || { echo "smoke: $b not built" >&2; exit 1; }
done
run=$(mktemp -d /tmp/quire-smoke.XXXXXX)
qpid=""
cleanup() {
  if [ -n "$qpid" ] && kill -0 "$qpid" 2>/dev/null; then
    kill -TERM "$qpid" 2>/dev/null || true
    for _ in $(seq 50); do kill -0 "$qpid" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$qpid" 2>/dev/null || true
  fi
  rm -rf "$run"
}
trap cleanup EXIT
fail() {
  echo "smoke: FAIL: $*" >&2
  echo "--- quire log (tail)" >&2; tail -20 "$run/quire.log" >&2 || true
  echo "--- quire-perf output (tail)" >&2; tail -20 "$run/perf.out" >&2 || true
  exit 1
}
read -r bport wport < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*[x.getsockname()[1] for x in s])')
"$quire" standalone --data-dir "$run/data" --bindAddress=127.0.0.1 \
  --advertisedAddress=127.0.0.1 --brokerServicePort="$bport" --webServicePort="$wport" \
  --journalSyncData=true >"$run/quire.log" 2>&1 </dev/null &
qpid=$!
for i in $(seq 100); do
  (exec 3<>"/dev/tcp/127.0.0.1/$bport") 2>/dev/null && break
  kill -0 "$qpid" 2>/dev/null || fail "quire exited at start"
  [ "$i" -lt 100 ] || fail "quire not accepting on $bport after 10 s"
  sleep 0.1
done
timeout 60 "$perf" both --service-url "pulsar://127.0.0.1:$bport" --topics smoke \
  --size 1024 --rate 5000 --seconds 3 --warmup-seconds 0 --report-interval-s 1 \
  --op-timeout-s 10 --json "$run/perf.json" >"$run/perf.out" 2>&1 ||
  fail "quire-perf exited with status $?"
python3 - "$run/perf.json" <<'PY' || fail "figures"
import json, sys
r = json.load(open(sys.argv[1]))
p, c = r["produced_msgs"], r["consumed_msgs"]
errs = r["send_errors"] + r["checksum_errors"]
print(f"smoke: produced {p} consumed {c} msgs in {r['duration_s']:.1f} s, "
      f"publish p99 {r['publish_latency_ms']['p99']:.3f} ms, errors {errs}")
ok = p > 0 and c == p and errs == 0
if not ok:
    print("smoke: expected produced > 0, consumed == produced, no errors", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
echo "smoke: OK"
