"""Smoke test of the stock Go client (github.com/apache/pulsar-client-go, see
go/go.mod): produce, consume + ack in order, read from earliest.

Built with `go build` (GOFLAGS=-mod=mod; modules in Go's module cache) into
tests/compat/.cache/go-smoke; skipped if go is not installed."""
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
GO_DIR = HERE / "go"
BIN = HERE / ".cache" / "go-smoke"
BUILD_TIMEOUT = 900
RUN_TIMEOUT = 180


def _tail(text, n=40):
    return "\n".join(str(text).splitlines()[-n:])


@pytest.fixture(scope="module")
def go_binary():
    if not shutil.which("go"):
        pytest.skip("go is not installed (scripts/deps.sh --test installs it)")
    BIN.parent.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, GOFLAGS="-mod=mod")
    try:
        r = subprocess.run(["go", "build", "-o", str(BIN), "."], cwd=GO_DIR, env=env,
                           capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"go build took more than {BUILD_TIMEOUT}s")
    assert r.returncode == 0, f"go build failed:\n{_tail(r.stdout + r.stderr)}"
    return BIN


def test_go_client_produce_consume_read(quire, go_binary):
    topic = f"persistent://public/default/go-smoke-{uuid.uuid4().hex[:8]}"
    n = 500
    try:
        r = subprocess.run([str(go_binary), quire.service_url, topic, str(n)],
                           capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"go smoke test did not finish within {RUN_TIMEOUT}s:\n{_tail(e.stdout)}")
    lines = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    assert lines, f"no RESULT line (exit {r.returncode}):\n{_tail(r.stdout + r.stderr)}"
    assert lines[-1] == f"RESULT OK produced={n} consumed={n} read={n}", \
        f"{lines[-1]}\n{_tail(r.stderr)}"
    assert r.returncode == 0
