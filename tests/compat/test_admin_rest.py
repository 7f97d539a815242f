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


def test_consumer_stats_avg_messages_per_entry(web, client):
    """Batches of 10 messages are entries of 10: the consumer's stats say so
    (Pulsar's avgMessagesPerEntry; the dispatcher sizes its reads by it)."""
    name = f"avg-entry-{_u()}"
    topic = f"persistent://public/default/{name}"
    consumer = client.subscribe(topic, "s", initial_position=E)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                                      batching_max_publish_delay_ms=60000)
    for i in range(50):
        producer.send_async(f"m{i}".encode(), None)
    producer.flush()
    got = [consumer.receive(10000).data() for _ in range(50)]
    assert got == [f"m{i}".encode() for i in range(50)]
    stats = web.get(f"/admin/v2/persistent/public/default/{name}/stats").json()
    consumers = stats["subscriptions"]["s"]["consumers"]
    assert [c["avgMessagesPerEntry"] for c in consumers] == [10]


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


# --------------------------------------------------------------------------------------
# Issue 5: statuses and error bodies, bad input, message-finding routes, slow and many
# clients. Every refusal must be a clear status with a JSON {"reason": ...}.

def _reason(r, status):
    assert r.status_code == status, f"{r.status_code} {r.text[:300]}"
    assert r.headers.get("Content-Type", "").startswith("application/json"), r.headers
    reason = r.json()["reason"]
    assert isinstance(reason, str) and reason
    return reason


def test_not_found_conflict_precondition_reasons(quire, web, tenant):
    ns = f"{tenant}/ns"
    # 404: unknown tenant / namespace / topic / subscription
    assert "does not exist" in _reason(web.get(f"/admin/v2/tenants/nope-{_u()}"), 404).lower()
    _reason(web.put(f"/admin/v2/namespaces/nope-{_u()}/ns"), 404)
    _reason(web.get(f"/admin/v2/namespaces/{tenant}/nope/retention"), 404)
    _reason(web.put(f"/admin/v2/persistent/{tenant}/nope/t"), 404)
    assert "not found" in _reason(web.get(f"/admin/v2/persistent/public/default/nope-{_u()}/stats"), 404)
    assert web.put(f"/admin/v2/namespaces/{ns}").status_code == 204
    assert web.put(f"/admin/v2/persistent/{ns}/t").status_code == 204
    assert "not found" in _reason(
        web.post(f"/admin/v2/persistent/{ns}/t/subscription/nosub/skip_all"), 404).lower()
    _reason(web.post(f"/admin/v2/persistent/{ns}/t/subscription/nosub/expireMessages/10"), 404)
    _reason(web.post(f"/admin/v2/persistent/{ns}/t/subscription/nosub/resetcursor/0"), 404)
    # 409: exists, not empty
    assert "already exists" in _reason(web.put(f"/admin/v2/tenants/{tenant}", json={}), 409)
    _reason(web.put(f"/admin/v2/namespaces/{ns}"), 409)
    assert "already exists" in _reason(web.put(f"/admin/v2/persistent/{ns}/t"), 409)
    _reason(web.delete(f"/admin/v2/tenants/{tenant}"), 409)
    assert "not empty" in _reason(web.delete(f"/admin/v2/namespaces/{ns}"), 409).lower()
    # 412: invalid names, unknown cluster, active producers
    assert _reason(web.put(f"/admin/v2/tenants/bad%20name", json={}), 412) == "Tenant name is not valid"
    _reason(web.put(f"/admin/v2/tenants/t-{_u()}", json={"allowedClusters": ["no-such"]}), 412)
    topic = f"persistent://{ns}/busy"
    c = pulsar.Client(quire.service_url)
    try:
        p = c.create_producer(topic)
        assert "active" in _reason(web.delete(f"/admin/v2/persistent/{ns}/busy"), 412)
        p.close()
    finally:
        c.close()
    assert web.delete(f"/admin/v2/persistent/{ns}/busy").status_code == 204
    assert web.delete(f"/admin/v2/persistent/{ns}/t").status_code == 204
    assert web.delete(f"/admin/v2/namespaces/{ns}").status_code == 204


def test_malformed_and_mistyped_bodies(web, tenant):
    ns = f"{tenant}/ns"
    assert web.put(f"/admin/v2/namespaces/{ns}").status_code == 204
    hdr = {"Content-Type": "application/json"}
    for path in (f"/admin/v2/tenants/t-{_u()}", f"/admin/v2/namespaces/{ns}/retention",
                 f"/admin/v2/namespaces/{ns}/messageTTL", f"/admin/v2/persistent/{ns}/p/partitions"):
        method = web.put if path.startswith("/admin/v2/tenants") or path.endswith("partitions") else web.post
        for bad in ("{not json", "[1,", "\x00\x01", '{"a":1}}', "nul"):
            r = method(path, data=bad.encode(), headers=hdr)
            _reason(r, 400)
    # well-formed JSON of the wrong type or shape
    cases = [
        (web.put, f"/admin/v2/tenants/t-{_u()}", {"allowedClusters": "standalone"}),
        (web.put, f"/admin/v2/tenants/t-{_u()}", {"adminRoles": [1, 2]}),
        (web.put, f"/admin/v2/tenants/t-{_u()}", [1, 2, 3]),
        (web.post, f"/admin/v2/namespaces/{ns}/retention", {"retentionTimeInMinutes": "60"}),
        (web.post, f"/admin/v2/namespaces/{ns}/retention", [60, 100]),
        (web.post, f"/admin/v2/namespaces/{ns}/messageTTL", "60"),
        (web.post, f"/admin/v2/namespaces/{ns}/messageTTL", 1.5),
        (web.post, f"/admin/v2/namespaces/{ns}/deduplication", "yes"),
        (web.post, f"/admin/v2/namespaces/{ns}/maxProducersPerTopic", {"n": 1}),
        (web.put, f"/admin/v2/persistent/{ns}/p/partitions", "two"),
        (web.put, f"/admin/v2/persistent/{ns}/p/partitions", [2]),
    ]
    for method, path, body in cases:
        _reason(method(path, json=body), 400)
    # well-formed values Pulsar refuses
    _reason(web.post(f"/admin/v2/namespaces/{ns}/messageTTL", json=-5), 412)
    assert web.put(f"/admin/v2/persistent/{ns}/p/partitions", json=0).status_code == 406
    # nothing was stored by the refused requests
    assert web.get(f"/admin/v2/namespaces/{ns}/retention").status_code in (200, 204)
    assert "retention_policies" not in web.get(f"/admin/v2/namespaces/{ns}").json()
    assert web.delete(f"/admin/v2/namespaces/{ns}").status_code == 204


@pytest.mark.parametrize("name,status", [
    ("%2E%2E", 412), ("%2E", 412), ("a" * 256, 412), ("t%C3%A9", 412), ("%E2%98%83", 412),
    ("a%2Fb", 412), ("a%20b", 412), ("a%00b", 400),
])
def test_invalid_tenant_names(web, name, status):
    r = web.put(f"/admin/v2/tenants/{name}", json={"adminRoles": [], "allowedClusters": ["standalone"]})
    reason = _reason(r, status)
    if status == 412:
        assert reason == "Tenant name is not valid"
    assert all(n in ("public", "pulsar") or n.startswith(("t-", "cli-", "jadmin-"))
               for n in web.get("/admin/v2/tenants").json())


def test_invalid_names_elsewhere(web, tenant):
    _reason(web.put(f"/admin/v2/namespaces/{tenant}/%2E%2E"), 412)
    _reason(web.put(f"/admin/v2/namespaces/{tenant}/{'n' * 300}"), 412)
    _reason(web.put(f"/admin/v2/namespaces/{tenant}/%C3%A9"), 412)
    _reason(web.get(f"/admin/v2/persistent/%2E%2E/default/t/stats"), 412)
    assert web.get(f"/admin/v2/namespaces/{tenant}").json() == []
    # an empty segment is not a name: no route (404/405), never a stored key
    assert web.put(f"/admin/v2/tenants//x").status_code in (404, 405)
    assert web.put(f"/admin/v2/namespaces/{tenant}//").status_code in (404, 405)


def test_oversized_body_is_413(web, tenant):
    big = b'{"adminRoles":["' + b"a" * (6 * 1024 * 1024) + b'"]}'
    r = web.post(f"/admin/v2/tenants/{tenant}", data=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413, r.status_code
    assert web.get(f"/admin/v2/tenants/{tenant}").json()["adminRoles"] == []


def _publish_times(client, topic, n_before, n_after, gap_s=1.2):
    """n_before messages, a pause, n_after messages; (ids, publish times, boundary ms)."""
    p = client.create_producer(topic, batching_enabled=False)
    ids = [p.send(f"a{i}".encode()) for i in range(n_before)]
    time.sleep(gap_s)
    boundary = int(time.time() * 1000)
    time.sleep(0.05)
    ids += [p.send(f"b{i}".encode()) for i in range(n_after)]
    p.close()
    return ids, boundary


def test_message_finding_routes(quire, web, client):
    name = f"find-{_u()}"
    topic = f"persistent://public/default/{name}"
    base = f"/admin/v2/persistent/public/default/{name}"
    client.subscribe(topic, "s", initial_position=E).close()
    client.subscribe(topic, "s2", initial_position=E).close()
    ids, boundary = _publish_times(client, topic, 3, 4)
    led = ids[0].ledger_id()

    # messageid/{ts}: the first message published at or after ts
    assert web.get(f"{base}/messageid/0").json() == {"ledgerId": led, "entryId": 0, "partitionIndex": -1}
    assert web.get(f"{base}/messageid/{boundary}").json()["entryId"] == ids[3].entry_id()
    _reason(web.get(f"{base}/messageid/{boundary + 3_600_000}"), 404)
    _reason(web.get(f"{base}/messageid/notanumber"), 400)

    # resetcursor/{ts}: the subscription restarts after the boundary
    assert web.post(f"{base}/subscription/s/resetcursor/{boundary}").status_code == 204
    stats = web.get(f"{base}/stats").json()
    assert stats["subscriptions"]["s"]["msgBacklog"] == 4
    r = web.get(f"{base}/subscription/s/position/1")
    assert r.status_code == 200 and r.content == b"b0"
    assert web.post(f"{base}/subscription/s/resetcursor/0").status_code == 204
    assert web.get(f"{base}/stats").json()["subscriptions"]["s"]["msgBacklog"] == 7
    c = client.subscribe(topic, "s", initial_position=E)
    assert c.receive(10000).data() == b"a0"
    c.close()

    # examinemessage and ledger/{l}/entry/{e}
    r = web.get(f"{base}/examinemessage?initialPosition=earliest&messagePosition=2")
    assert r.status_code == 200 and r.content == b"a1"
    assert r.headers["X-Pulsar-Message-ID"] == f"{led}:{ids[1].entry_id()}"
    r = web.get(f"{base}/examinemessage?initialPosition=latest&messagePosition=1")
    assert r.content == b"b3"
    assert web.get(f"{base}/examinemessage").content == b"b3"  # defaults: latest, 1
    _reason(web.get(f"{base}/examinemessage?initialPosition=middle"), 412)
    _reason(web.get(f"{base}/examinemessage?messagePosition=0"), 412)
    r = web.get(f"{base}/ledger/{led}/entry/{ids[4].entry_id()}")
    assert r.status_code == 200 and r.content == b"b1"
    _reason(web.get(f"{base}/ledger/{led}/entry/999999"), 404)
    _reason(web.get(f"{base}/ledger/x/entry/0"), 400)

    # expireMessages/{secs}: what is older than secs is acknowledged
    age_s = max(0, int((time.time() * 1000 - boundary) / 1000)) + 1
    assert web.post(f"{base}/subscription/s/expireMessages/3600").status_code == 204
    assert web.get(f"{base}/stats").json()["subscriptions"]["s"]["msgBacklog"] == 7
    assert web.post(f"{base}/subscription/s/expireMessages/0").status_code == 204
    assert web.get(f"{base}/stats").json()["subscriptions"]["s"]["msgBacklog"] == 0
    assert web.post(f"{base}/all_subscription/expireMessages/0").status_code == 204
    assert web.get(f"{base}/stats").json()["subscriptions"]["s2"]["msgBacklog"] == 0
    _reason(web.post(f"{base}/subscription/s/expireMessages/-1"), 400)
    assert age_s >= 1

    # an empty topic has nothing to examine
    empty = f"empty-{_u()}"
    assert web.put(f"/admin/v2/persistent/public/default/{empty}").status_code == 204
    _reason(web.get(f"/admin/v2/persistent/public/default/{empty}/examinemessage"), 412)
    _reason(web.get(f"/admin/v2/persistent/public/default/{empty}/messageid/0"), 404)


# --------------------------------------------------------------------------------------
# Slow and many clients, on a server of their own: a short request timeout
# (httpRequestTimeoutSeconds=2) and 10,000 connections at most (the default bound).

REQUEST_TIMEOUT_S = 2
MAX_CONNECTIONS = 10000


def _rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def _nofile_limit(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                return int(line.split()[3])
    raise AssertionError("no open files limit")


@pytest.fixture(scope="module")
def tight_server():
    from conftest import EXTERNAL, QuireServer
    if EXTERNAL:
        pytest.skip("needs a server started with its own HTTP bounds")
    import resource
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = MAX_CONNECTIONS + 2048  # this process's sockets; the server inherits the limit
    if soft < want:
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, want), hard))
    srv = QuireServer(extra_args=[f"--httpRequestTimeoutSeconds={REQUEST_TIMEOUT_S}",
                                  f"--httpMaxConnections={MAX_CONNECTIONS}"]).start()
    yield srv
    srv.cleanup()


def test_slowloris_headers_are_cut_at_the_request_timeout(tight_server):
    import socket
    request = b"GET /admin/v2/clusters HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 200 + b"\r\n\r\n"
    s = socket.create_connection(("127.0.0.1", tight_server.web_port), timeout=10)
    started = time.monotonic()
    sent = 0
    closed_after = None
    try:
        s.settimeout(0.25)
        while sent < len(request) and time.monotonic() - started < REQUEST_TIMEOUT_S + 8:
            try:
                s.send(request[sent:sent + 1])
                sent += 1
            except OSError:  # reset by the server
                closed_after = time.monotonic() - started
                break
            try:
                data = s.recv(4096)
                if not data or data.startswith(b"HTTP/1.1 4"):
                    closed_after = time.monotonic() - started
                    break
            except socket.timeout:
                pass
    finally:
        s.close()
    assert closed_after is not None, f"still open after {time.monotonic() - started:.1f}s ({sent} bytes)"
    assert sent < len(request)
    assert REQUEST_TIMEOUT_S - 0.5 <= closed_after <= REQUEST_TIMEOUT_S + 3, closed_after
    # meanwhile and afterwards, normal requests are served
    assert requests.get(f"{tight_server.web_url}/admin/v2/clusters", timeout=10).json() == ["standalone"]


def test_ten_thousand_idle_connections(tight_server):
    import socket
    pid = tight_server.proc.pid
    import resource
    mine = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    n = min(MAX_CONNECTIONS, mine - 512, _nofile_limit(pid) - 512)
    assert n >= 1000, f"open-file limits too low for this test: {mine}, {_nofile_limit(pid)}"
    assert requests.get(f"{tight_server.web_url}/admin/v2/brokers/ready", timeout=10).status_code == 200
    rss_before = _rss_kib(pid)
    socks = []
    try:
        started = time.monotonic()
        for _ in range(n):
            socks.append(socket.create_connection(("127.0.0.1", tight_server.web_port), timeout=15))
        opened_s = time.monotonic() - started
        # the binary port keeps serving while n web connections sit idle
        c = pulsar.Client(tight_server.service_url, operation_timeout_seconds=15)
        try:
            topic = f"persistent://public/default/idle-conns-{_u()}"
            cons = c.subscribe(topic, "s", initial_position=E)
            p = c.create_producer(topic)
            for i in range(100):
                p.send(f"m{i}".encode())
            got = [cons.receive(10000).data() for _ in range(100)]
            assert got == [f"m{i}".encode() for i in range(100)]
        finally:
            c.close()
        time.sleep(1)  # let the server accept everything
        rss_open = _rss_kib(pid)
        if n == MAX_CONNECTIONS:
            # one more: a clear 503 and a close, not a hang
            extra = socket.create_connection(("127.0.0.1", tight_server.web_port), timeout=10)
            extra.settimeout(10)
            answer = extra.recv(4096)
            extra.close()
            assert answer.startswith(b"HTTP/1.1 503") and b"Too many connections" in answer, answer
    finally:
        for s in socks:
            s.close()
    growth_mib = (rss_open - rss_before) / 1024
    print(f"\n{n} idle connections opened in {opened_s:.1f}s; server RSS "
          f"{rss_before / 1024:.1f} -> {rss_open / 1024:.1f} MiB (+{growth_mib:.1f})")
    assert growth_mib < 64, f"{n} idle connections grew the server's RSS by {growth_mib:.1f} MiB"
    deadline = time.monotonic() + 15
    while True:  # closed connections are released: requests are served again
        try:
            r = requests.get(f"{tight_server.web_url}/admin/v2/clusters", timeout=5)
            if r.status_code == 200:
                break
        except requests.RequestException:
            pass
        assert time.monotonic() < deadline, "the web port did not recover after the connections closed"
        time.sleep(0.2)
    assert _rss_kib(pid) / 1024 < rss_open / 1024 + 16


def test_message_lookups_refused_on_a_partitioned_topic(web, quire):
    """As Pulsar: only partitions hold messages; the partitioned name gets 405."""
    import pulsar
    local = f"parted-{_u()}"
    base = f"/admin/v2/persistent/public/default/{local}"
    assert web.put(f"{base}/partitions", json=2).status_code == 204
    reason = _reason(web.get(f"{base}/examinemessage?initialPosition=earliest&messagePosition=1"), 405)
    assert reason.startswith("Examine messages on a partitioned topic is not allowed")
    reason = _reason(web.get(f"{base}/messageid/0"), 405)
    assert reason.startswith("Get message ID by timestamp on a partitioned topic is not allowed")
    client = pulsar.Client(quire.service_url)
    p = client.create_producer(f"persistent://public/default/{local}-partition-0")
    p.send(b"in-partition-0")
    client.close()
    r = web.get(f"{base}-partition-0/examinemessage?initialPosition=earliest&messagePosition=1")
    assert r.status_code == 200 and r.content == b"in-partition-0"
