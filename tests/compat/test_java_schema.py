"""The schema registry with the stock Java client (java/SchemaSmoke.java): a typed
AVRO producer (PRODUCER.schema), per-message schemas on a bytes producer
(GET_OR_CREATE_SCHEMA, Java-first), a refused STRING schema (per message, and a
STRING producer whose exception carries the broker's reason), an AVRO consumer
that registers the schema while the topic's only consumer is AUTO_CONSUME (which
Pulsar does not count as activity), and an AUTO_CONSUME consumer that fetches
each message's schema by version (GET_SCHEMA).

Uses the Maven build of test_java_client.py (its java_classpath fixture);
skipped if java or mvn is not installed."""
import uuid

import pytest

from test_java_client import RUN_TIMEOUT, _tail, java_classpath  # noqa: F401  (fixture)


def test_java_client_schemas(quire, java_classpath):  # noqa: F811
    import subprocess
    topic = f"persistent://public/default/java-schema-{uuid.uuid4().hex[:8]}"
    try:
        r = subprocess.run(["java", "-cp", java_classpath, "quire.compat.SchemaSmoke",
                            quire.service_url, topic],
                           capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"java schema smoke test did not finish within {RUN_TIMEOUT}s:\n{_tail(str(e.stdout))}")
    lines = [l for l in r.stdout.splitlines() if l.startswith("RESULT ")]
    assert lines, f"no RESULT line (exit {r.returncode}):\n{_tail(r.stdout + r.stderr)}"
    assert lines[-1] == "RESULT OK consumer_registered=1 typed=1 multi=2 refused=2 auto_consumed=3", \
        f"{lines[-1]}\n{_tail(r.stderr)}"
    assert r.returncode == 0
