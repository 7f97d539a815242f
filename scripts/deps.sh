#!/usr/bin/env bash
# Installs what Quire needs to build and test on Debian, only what is missing.
# Idempotent; non-interactive (CI has no stdin). Usage: scripts/deps.sh [--test]
#   (no flag) build dependencies only; --test adds what the test suites need.
set -euo pipefail

build_pkgs=(cmake ninja-build gcc pkg-config
  libev-dev libprotobuf-c-dev protobuf-c-compiler libsqlite3-dev
  libzstd-dev liblz4-dev libsnappy-dev zlib1g-dev libssl-dev
  libjansson-dev libhttp-parser-dev libcurl4-openssl-dev libjemalloc-dev)
test_pkgs=(clang libclang-rt-dev libcunit1-dev python3 python3-pip maven golang-go openjdk-17-jdk-headless)

want=("${build_pkgs[@]}")
if [ "${1:-}" = "--test" ]; then
  want+=("${test_pkgs[@]}")
fi

missing=()
for p in "${want[@]}"; do
  # A tool already on PATH (e.g. go, java, mvn installed outside Debian) counts.
  case "$p" in
    golang-go) command -v go >/dev/null 2>&1 && continue ;;
    openjdk-17-jdk-headless) command -v javac >/dev/null 2>&1 && continue ;;
    maven) command -v mvn >/dev/null 2>&1 && continue ;;
    python3-pip) command -v pip3 >/dev/null 2>&1 && continue ;;
    python3) command -v python3 >/dev/null 2>&1 && continue ;;
    cmake) command -v cmake >/dev/null 2>&1 && continue ;;
    gcc) command -v gcc >/dev/null 2>&1 && continue ;;
  esac
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ ${#missing[@]} -gt 0 ]; then
  echo "deps: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if [ "${1:-}" = "--test" ]; then
  # Python test dependencies: the official Pulsar client (wraps the C++ client),
  # pytest, requests and Prometheus' own text-format parser.
  py_missing=()
  python3 -c 'import pulsar' 2>/dev/null || py_missing+=("pulsar-client")
  python3 -c 'import pytest' 2>/dev/null || py_missing+=("pytest")
  python3 -c 'import requests' 2>/dev/null || py_missing+=("requests")
  python3 -c 'import prometheus_client' 2>/dev/null || py_missing+=("prometheus_client")
  # fastavro: pulsar.schema.AvroSchema/JsonSchema need it (tests/compat/test_schema.py).
  python3 -c 'import fastavro' 2>/dev/null || py_missing+=("fastavro")
  if [ ${#py_missing[@]} -gt 0 ]; then
    echo "deps: pip installing ${py_missing[*]}"
    python3 -m pip install -q "${py_missing[@]}" 2>/dev/null ||
      python3 -m pip install -q --break-system-packages "${py_missing[@]}"
  fi
fi
