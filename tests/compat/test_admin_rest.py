"""REST admin API, HTTP lookup and /metrics, as pulsar-admin and the clients use them.

Runs against the `quire` fixture of conftest.py (its `web_url` and `service_url`),
so the same assertions can be checked against Apache Pulsar
(QUIRE_COMPAT_TARGET=pulsar). Statuses and bodies follow docs/admin-api.md.
"""
import time
import uuid

import pulsar
import pytest
import requests

E = pulsar.InitialPosition.Earliest


def _u():
    return uuid.uuid4().hex[:10]


@pytest.fixture
def web(quire):
    s = requests.Session()
    base = quire.web_url

    class Web:
        url = base

        def __getattr__(self, method):
            def call(path, **kw):
                return s.request(method.upper(), base + path, timeout=15, **kw)
            return call

    yield Web()
    s.close()


@pytest.fixture
def tenant(web):
    name = f"t-{_u()}"
    r = web.put(f"/admin/v2/tenants/{name}", json={"adminRoles": [], "allowedClusters": ["standalone"]})
    assert r.status_code == 204, r.text
    yield name


def test_defaults_of_a_fresh_standalone(web):
    assert web.get("/admin/v2/clusters").json() == ["standalone"]
    assert "public" in web.get("/admin/v2/tenants").json()
    assert "public/default" in web.get("/admin/v2/namespaces/public").json()
    info = web.get("/admin/v2/tenants/public").json()
    assert info["allowedClusters"] == ["standalone"]
    cluster = web.get("/admin/v2/clusters/standalone").json()
    assert cluster["brokerServiceUrl"].startswith("pulsar://")


def test_errors_are_json_reasons(web):
    r = web.get("/admin/v2/tenants/does-not-exist")
    assert r.status_code == 404 and "reason" in r.json()
    r = web.put(f"/admin/v2/tenants/bad%20name-{_u()}", json={})
    assert r.status_code == 412 and r.json()["reason"] == "Tenant name is not valid"
    r = web.put(f"/admin/v2/tenants/t-{_u()}", data="{not json", headers={"Content-Type": "application/json"})
    assert r.status_code == 400
    r = web.put(f"/admin/v2/tenants/t-{_u()}", json={"allowedClusters": ["no-such-cluster"]})
    assert r.status_code == 412


def test_tenant_lifecycle(web, tenant):
    assert tenant in web.get("/admin/v2/tenants").json()
    assert web.put(f"/admin/v2/tenants/{tenant}", json={}).status_code == 409
    r = web.post(f"/admin/v2/tenants/{tenant}", json={"adminRoles": ["boss"], "allowedClusters": ["standalone"]})
    assert r.status_code == 204
    assert web.get(f"/admin/v2/tenants/{tenant}").json()["adminRoles"] == ["boss"]
    assert web.put(f"/admin/v2/namespaces/{tenant}/ns").status_code == 204
    assert web.delete(f"/admin/v2/tenants/{tenant}").status_code == 409
    assert web.delete(f"/admin/v2/namespaces/{tenant}/ns").status_code == 204
    assert web.delete(f"/admin/v2/tenants/{tenant}").status_code == 204
    assert web.get(f"/admin/v2/tenants/{tenant}").status_code == 404


def test_namespace_policies(web, tenant):
    ns = f"{tenant}/ns"
    assert web.put(f"/admin/v2/namespaces/{ns}").status_code == 204
    assert web.put(f"/admin/v2/namespaces/{ns}").status_code == 409
    assert web.post(f"/admin/v2/namespaces/{ns}/messageTTL", json=-1).status_code in (400, 412)
    assert web.post(f"/admin/v2/namespaces/{ns}/messageTTL", json="x").status_code == 400
    assert web.post(f"/admin/v2/namespaces/{ns}/messageTTL", json=60).status_code == 204
    assert web.get(f"/admin/v2/namespaces/{ns}/messageTTL").json() == 60
    ret = {"retentionTimeInMinutes": 60, "retentionSizeInMB": 100}
    assert web.post(f"/admin/v2/namespaces/{ns}/retention", json=ret).status_code == 204
    assert web.get(f"/admin/v2/namespaces/{ns}/retention").json() == ret
    assert web.post(f"/admin/v2/namespaces/{ns}/deduplication", json=True).status_code == 204
    assert web.post(f"/admin/v2/namespaces/{ns}/maxProducersPerTopic", json=3).status_code == 204
    policies = web.get(f"/admin/v2/namespaces/{ns}").json()
    assert policies["message_ttl_in_seconds"] == 60
    assert policies["retention_policies"] == ret
    assert policies["deduplicationEnabled"] is True
    assert policies["max_producers_per_topic"] == 3
    assert web.delete(f"/admin/v2/namespaces/{ns}/messageTTL").status_code == 204
    assert "message_ttl_in_seconds" not in web.get(f"/admin/v2/namespaces/{ns}").json()
    assert web.post(f"/admin/v2/namespaces/{ns}/permissions/alice", json=["produce"]).status_code == 204
    assert web.get(f"/admin/v2/namespaces/{ns}/permissions").json() == {"alice": ["produce"]}
    assert web.delete(f"/admin/v2/namespaces/{ns}").status_code == 204


def test_topics_and_partitions(web, tenant):
    ns = f"{tenant}/ns"
    assert web.put(f"/admin/v2/namespaces/{ns}").status_code == 204
    assert web.put(f"/admin/v2/persistent/{ns}/plain").status_code == 204
    assert web.put(f"/admin/v2/persistent/{ns}/plain").status_code == 409
    assert web.put(f"/admin/v2/persistent/{ns}/parts/partitions", json=2).status_code == 204
    assert web.put(f"/admin/v2/persistent/{ns}/parts/partitions", json=2).status_code == 409
    assert web.get(f"/admin/v2/persistent/{ns}/parts/partitions").json() == {"partitions": 2}
    assert web.post(f"/admin/v2/persistent/{ns}/parts/partitions", json=1).status_code == 422
    assert web.post(f"/admin/v2/persistent/{ns}/parts/partitions", json=3).status_code == 204
    listed = web.get(f"/admin/v2/persistent/{ns}").json()
    assert f"persistent://{ns}/plain" in listed
    assert f"persistent://{ns}/parts-partition-2" in listed
    assert web.get(f"/admin/v2/persistent/{ns}/partitioned").json() == [f"persistent://{ns}/parts"]
    assert web.delete(f"/admin/v2/namespaces/{ns}").status_code == 409
    assert web.delete(f"/admin/v2/persistent/{ns}/plain").status_code == 204
    assert web.delete(f"/admin/v2/persistent/{ns}/plain").status_code == 404
    assert web.delete(f"/admin/v2/persistent/{ns}/parts/partitions").status_code == 204
    assert web.delete(f"/admin/v2/namespaces/{ns}").status_code == 204


def test_http_lookup_client_produces_and_consumes(quire, web):
    topic = f"persistent://public/default/http-{_u()}"
    c = pulsar.Client(quire.web_url)
    try:
        consumer = c.subscribe(topic, "s", initial_position=E)
        producer = c.create_producer(topic)
        for i in range(5):
            producer.send(f"m{i}".encode())
        got = [consumer.receive(10000).data() for _ in range(5)]
        assert got == [f"m{i}".encode() for i in range(5)]
        stats = web.get(f"/admin/v2/persistent/public/default/{topic.rsplit('/', 1)[1]}/stats").json()
        assert stats["msgInCounter"] >= 5
        assert stats["subscriptions"]["s"]["consumers"]
    finally:
        c.close()
    lookup = web.get(f"/lookup/v2/topic/persistent/public/default/{topic.rsplit('/', 1)[1]}").json()
    assert lookup["brokerUrl"] == quire.service_url


def test_metrics_exposition(quire, web, client):
    topic = f"persistent://public/default/metrics-{_u()}"
    p = client.create_producer(topic)
    for _ in range(20):
        p.send(b"x" * 100)
    time.sleep(2.5)
    r = web.get("/metrics")
    assert r.status_code == 200 and r.headers["Content-Type"].startswith("text/plain")
    text = r.text
    assert "# TYPE pulsar_rate_in gauge" in text
    assert "process_resident_memory_bytes " in text
    lines = [l for l in text.splitlines() if f'topic="{topic}"' in l]
    assert any(l.startswith("pulsar_in_messages_total{") and l.endswith(" 20") for l in lines), lines


def test_broker_endpoints(web):
    assert web.get("/admin/v2/brokers/health").text == "ok"
    assert web.get("/admin/v2/brokers/ready").status_code == 200
    assert len(web.get("/admin/v2/brokers/standalone").json()) == 1
    conf = web.get("/admin/v2/brokers/configuration/runtime").json()
    assert "brokerServicePort" in conf
