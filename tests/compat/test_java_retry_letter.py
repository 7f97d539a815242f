"""Retry-letter and dead-letter topics with the stock Java client
(java/RetryLetter.java): reconsumeLater sends the message to the retry topic with
a 1 s delivery delay (delayed delivery on the broker), it comes back no earlier,
and after maxRedeliverCount retries it lands on the dead-letter topic.

Uses the Maven build of test_java_client.py (its java_classpath fixture)."""
import subprocess
import uuid

import pytest

from test_java_client import RUN_TIMEOUT, _tail, java_classpath  # noqa: F401  (fixture)


def test_java_retry_and_dead_letter_topics(quire, java_classpath):  # noqa: F811
    topic = f"persistent://public/default/java-retry-{uuid.uuid4().hex[:8]}"
    try:
        r = subprocess.run(["java", "-cp", java_classpath, "quire.compat.RetryLetter",
                            quire.service_url, topic],
                           capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"java retry-letter test did not finish within {RUN_TIMEOUT}s:\n{_tail(str(e.stdout))}")
    lines = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    assert lines, f"no RESULT line (exit {r.returncode}):\n{_tail(r.stdout + r.stderr)}"
    assert lines[-1] == "RESULT OK deliveries=3 dead_lettered=1", f"{lines[-1]}\n{_tail(r.stderr)}"
    assert r.returncode == 0
