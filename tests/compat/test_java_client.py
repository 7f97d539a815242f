"""Smoke test of the stock Java client (org.apache.pulsar:pulsar-client, see
java/pom.xml): produce, consume + ack in order, read from earliest.

Built with Maven into tests/compat/.cache/java-target (artifacts cached in tests/compat/.cache/m2, env
QUIRE_COMPAT_M2 to override); skipped if java or mvn is not installed."""
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
JAVA_DIR = HERE / "java"
M2 = Path(os.environ.get("QUIRE_COMPAT_M2", str(HERE / ".cache" / "m2")))
BUILD_TIMEOUT = 900
RUN_TIMEOUT = 180


def _tail(text, n=40):
    return "\n".join(text.splitlines()[-n:])


@pytest.fixture(scope="module")
def java_classpath():
    for tool in ("java", "mvn"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (scripts/deps.sh --test installs it)")
    try:
        r = subprocess.run(["mvn", "-q", "-B", f"-Dmaven.repo.local={M2}", "package"],
                           cwd=JAVA_DIR, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"mvn package took more than {BUILD_TIMEOUT}s")
    assert r.returncode == 0, f"mvn package failed:\n{_tail(r.stdout + r.stderr)}"
    target = HERE / ".cache" / "java-target"
    return f"{target / 'classes'}{os.pathsep}{target / 'lib'}/*"


def run_smoke(classpath, service_url, topic, n):
    try:
        r = subprocess.run(["java", "-cp", classpath, "quire.compat.Smoke", service_url, topic, str(n)],
                           capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"java smoke test did not finish within {RUN_TIMEOUT}s:\n{_tail(str(e.stdout))}")
    return r


def test_java_client_produce_consume_read(quire, java_classpath):
    topic = f"persistent://public/default/java-smoke-{uuid.uuid4().hex[:8]}"
    n = 500
    r = run_smoke(java_classpath, quire.service_url, topic, n)
    lines = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    assert lines, f"no RESULT line (exit {r.returncode}):\n{_tail(r.stdout + r.stderr)}"
    assert lines[-1] == f"RESULT OK produced={n} consumed={n} read={n}", \
        f"{lines[-1]}\n{_tail(r.stderr)}"
    assert r.returncode == 0
