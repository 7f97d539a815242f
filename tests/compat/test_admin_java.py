"""The Java PulsarAdmin (org.apache.pulsar:pulsar-client-admin, see admin-java/pom.xml)
against Quire: its Jackson mapping of TopicStats, PersistentTopicInternalStats,
PartitionedTopicStats, Policies and TenantInfo must accept Quire's JSON, and the
values must be the ones the Python client produced.

Built with Maven into tests/compat/.cache/admin-java-target (artifacts cached in
tests/compat/.cache/m2, env QUIRE_COMPAT_M2 to override); skipped if java or mvn
is not installed."""
import os
import shutil
import subprocess
import uuid
from pathlib import Path

import pulsar
import pytest
import requests

from compat_helpers import new_client, produce

HERE = Path(__file__).resolve().parent
SRC_DIR = HERE / "admin-java"
TARGET = HERE / ".cache" / "admin-java-target"
M2 = Path(os.environ.get("QUIRE_COMPAT_M2", str(HERE / ".cache" / "m2")))
BUILD_TIMEOUT = 900
RUN_TIMEOUT = 180


def _tail(text, n=60):
    return "\n".join(str(text).splitlines()[-n:])


@pytest.fixture(scope="module")
def admin_java_classpath():
    for tool in ("java", "mvn"):
        if not shutil.which(tool):
            pytest.skip(f"{tool} is not installed (scripts/deps.sh --test installs it)")
    try:
        r = subprocess.run(["mvn", "-q", "-B", f"-Dmaven.repo.local={M2}", "package"],
                           cwd=SRC_DIR, capture_output=True, text=True, timeout=BUILD_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"mvn package took more than {BUILD_TIMEOUT}s")
    assert r.returncode == 0, f"mvn package failed:\n{_tail(r.stdout + r.stderr)}"
    return f"{TARGET / 'classes'}{os.pathsep}{TARGET / 'lib'}/*"


def test_java_admin_deserializes_stats_policies_tenants(quire, admin_java_classpath):
    web = quire.web_url
    u = uuid.uuid4().hex[:8]
    tenant, ns = f"jadmin-{u}", f"jadmin-{u}/ns"
    topic = f"persistent://{ns}/t"
    parted = f"persistent://{ns}/p"
    n = 10
    assert requests.put(f"{web}/admin/v2/tenants/{tenant}",
                        json={"adminRoles": [], "allowedClusters": ["standalone"]}).status_code == 204
    assert requests.put(f"{web}/admin/v2/namespaces/{ns}").status_code == 204
    assert requests.post(f"{web}/admin/v2/namespaces/{ns}/retention",
                         json={"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}).status_code == 204
    assert requests.put(f"{web}/admin/v2/persistent/{ns}/p/partitions", json=2).status_code == 204
    client = new_client(quire.service_url)
    try:
        client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest).close()
        produce(client, topic, [f"m{i}".encode() for i in range(n)])
        produce(client, parted, [b"x"] * 4)  # loads the partitions
    finally:
        client.close()
    try:
        r = subprocess.run(["java", "-cp", admin_java_classpath, "quire.compat.AdminCheck", web, topic,
                            parted, ns, tenant, str(n)],
                           capture_output=True, text=True, timeout=RUN_TIMEOUT)
    except subprocess.TimeoutExpired as e:
        pytest.fail(f"AdminCheck did not finish within {RUN_TIMEOUT}s:\n{_tail(e.stdout)}")
    out = r.stdout
    assert "RESULT OK" in out and r.returncode == 0, f"exit {r.returncode}:\n{_tail(out + r.stderr)}"
    for name in ("getStats msgInCounter", "getInternalStats numberOfEntries", "getPartitionedStats",
                 "getPolicies retention", "getTenantInfo", "healthcheck"):
        assert f"CHECK {name}" in out, out
