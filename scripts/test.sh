#!/usr/bin/env bash
# Builds Quire and runs every test: the CUnit unit tests (release build, then the
# same under ASan+UBSan), then tests/compat (pytest with the official Pulsar
# clients against a Quire each test starts). Prints the runners' own summaries.
# Usage: scripts/test.sh [--quick]   (--quick: no sanitizer build)
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
quick=0
[ "${1:-}" = "--quick" ] && quick=1

scripts/deps.sh --test || { echo "test: installing dependencies failed"; exit 1; }

failed=()
run_units() { # $1 build dir
  local dir=$1 t
  for t in "$dir"/tests/unit/unit_*; do
    [ -x "$t" ] || continue
    echo "== $(basename "$t") ($(basename "$dir"))"
    if ! timeout 900 "$t"; then
      failed+=("$(basename "$dir")/$(basename "$t")")
    fi
  done
}

build() { # $1 dir, rest: cmake args
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null &&
    ninja -C "$dir" >"$dir.log" 2>&1 || { cat "$dir.log"; echo "test: build $dir failed"; exit 1; }
}

build build
run_units build
if [ $quick -eq 0 ]; then
  build build-asan -DQUIRE_SANITIZE=ON
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  run_units build-asan
  unset ASAN_OPTIONS UBSAN_OPTIONS
fi

# Fuzz targets (libFuzzer, clang, ASan+UBSan): a short run of each in CI; the
# long runs are recorded in docs/security.md and docs/protocol.md.
if [ $quick -eq 0 ] && command -v clang >/dev/null 2>&1; then
  if CC=clang cmake -S . -B build-fuzz -G Ninja -DQUIRE_FUZZ=ON >/dev/null &&
    ninja -C build-fuzz fuzz_frame fuzz_http_request fuzz_policy_json fuzz_jwt fuzz_journal fuzz_entry_log >build-fuzz.log 2>&1; then
    for f in frame http_request policy_json jwt journal entry_log; do
      scratch=$(mktemp -d)
      echo "== fuzz_$f (20 s)"
      if timeout 120 build-fuzz/tests/fuzz/fuzz_$f -max_total_time=20 -print_final_stats=0 \
        "$scratch" "tests/fuzz/corpus/$f" >"$scratch.log" 2>&1; then
        grep -E "^Done [0-9]+ runs" "$scratch.log" || tail -1 "$scratch.log"
      else
        tail -40 "$scratch.log"
        failed+=("fuzz_$f")
      fi
      rm -rf "$scratch" "$scratch.log"
    done
  else
    tail -20 build-fuzz.log
    failed+=("fuzz build")
  fi
fi

if [ -x build/src/quire ] && [ -x bench/smoke.sh ]; then
  echo "== quire-perf smoke against quire standalone"
  timeout 120 bench/smoke.sh build || failed+=("bench/smoke.sh")
fi

if [ -x build/src/quire ] && [ -d tests/compat ] && ls tests/compat/test_*.py >/dev/null 2>&1; then
  echo "== tests/compat (pytest)"
  QUIRE_BIN="$root/build/src/quire" timeout 3600 python3 -m pytest -q tests/compat
  rc=$?
  # 5 = no tests collected: not a failure of the suite itself.
  if [ $rc -ne 0 ] && [ $rc -ne 5 ]; then failed+=("tests/compat"); fi
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "test: FAILED: ${failed[*]}"
  exit 1
fi
echo "test: all suites passed"
