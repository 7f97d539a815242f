#!/usr/bin/env bash
# Builds Quire (installing missing Debian packages) and runs `quire standalone`
# on 127.0.0.1:6650 (binary protocol) and :8080 (HTTP), data under ./data.
# Extra arguments are passed to quire standalone (e.g. --brokerServicePort=6660).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/deps.sh
cmake -S . -B build -G Ninja >/dev/null
ninja -C build quire >/dev/null
exec build/src/quire standalone -c conf/standalone.conf --data-dir data "$@"
