"""Multi-tenant rate limits and quotas (docs/broker.md, "Rate limits and quotas").

Each test creates its own tenant and namespace through REST, sets the policy under
test there, and checks what a stock Python client sees: publish throttling is
back-pressure (the producer slows down to the rate; nothing is lost or refused),
dispatch throttling slows a consumer down, max producers/consumers are refused
with ProducerBusy/ConsumerBusy, max unacked messages stops delivery until acks,
max topics per namespace refuses one more topic (412 / NotAllowedError).

Rates are measured over several seconds after the initial burst (a bucket starts
full: one period's worth), and asserted within generous bands: the machine that
runs this is small and shared.

The isolation test (tenant A flooding at 10x its quota while tenant B produces at
a fixed rate) prints its figures; run with `-s` to see them.
"""
import json
import os
import statistics
import subprocess
import threading
import time
from pathlib import Path

import pytest
import pulsar

from compat_helpers import http, http_json, new_client, unique
from conftest import QUIRE_BIN

CLUSTER = "standalone"


# ------------------------------------------------------------------ helpers --

def make_namespace(srv, prefix="rl"):
    tenant = unique(prefix)
    st, body = http("PUT", f"{srv.web_url}/admin/v2/tenants/{tenant}",
                    json.dumps({"adminRoles": [], "allowedClusters": [CLUSTER]}))
    assert st in (200, 204), (st, body)
    st, body = http("PUT", f"{srv.web_url}/admin/v2/namespaces/{tenant}/ns", "{}")
    assert st in (200, 204), (st, body)
    return f"{tenant}/ns"


def set_policy(srv, ns, what, value, expect=204):
    st, body = http("POST", f"{srv.web_url}/admin/v2/namespaces/{ns}/{what}", json.dumps(value))
    assert st == expect, (what, value, st, body)
    return st, body


def settle():
    """Policies reach live topics through a metadata watch: give it a moment."""
    time.sleep(1.0)


def receipt_times(producer, n, payload=lambda i: f"m-{i}".encode()):
    """send_async n messages as fast as the client can; returns the receipt times."""
    times = [None] * n
    errors = []
    done = threading.Event()
    lock = threading.Lock()
    count = [0]

    def cb_for(i):
        def cb(res, _msg_id):
            with lock:
                if res != pulsar.Result.Ok:
                    errors.append((i, res))
                times[i] = time.monotonic()
                count[0] += 1
                if count[0] == n:
                    done.set()
        return cb

    for i in range(n):
        producer.send_async(payload(i), cb_for(i))
    producer.flush()
    assert done.wait(120), f"only {count[0]} of {n} receipts"
    assert not errors, f"send errors (a throttled publish must never fail): {errors[:5]}"
    return times


def rate_between(times, a, b):
    return (b - a) / (times[b] - times[a])


def consume_all(client, topic, n, sub="check", timeout_ms=10000):
    c = client.subscribe(topic, sub, initial_position=pulsar.InitialPosition.Earliest)
    got = []
    try:
        for _ in range(n):
            m = c.receive(timeout_millis=timeout_ms)
            got.append(m.data())
            c.acknowledge(m)
    finally:
        c.close()
    return got


def percentile(xs, p):
    xs = sorted(xs)
    k = min(len(xs) - 1, max(0, int(round(p / 100.0 * (len(xs) - 1)))))
    return xs[k]


# ---------------------------------------------------------------- publishing --

def test_publish_rate_converges_without_loss(quire):
    """publishRate 200 msg/s set on a live topic: throughput ~200/s, nothing lost."""
    ns = make_namespace(quire)
    topic = f"persistent://{ns}/pub-{unique('t')}"
    client = new_client(quire.service_url)
    try:
        p = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True,
                                   max_pending_messages=500)
        p.send(b"warm")  # the topic is loaded and unthrottled
        set_policy(quire, ns, "publishRate",
                   {"publishThrottlingRateInMsg": 200, "publishThrottlingRateInByte": -1})
        settle()
        n = 1400
        times = receipt_times(p, n)
        rate = rate_between(times, 400, n - 1)
        print(f"publish rate with a 200 msg/s limit: {rate:.1f} msg/s")
        assert 150 <= rate <= 260, rate
        p.close()
        got = consume_all(client, topic, n + 1)
        assert got[0] == b"warm"
        assert got[1:] == [f"m-{i}".encode() for i in range(n)]
    finally:
        client.close()


def test_publish_rate_removed_takes_effect_at_once(quire):
    ns = make_namespace(quire)
    topic = f"persistent://{ns}/pub-{unique('t')}"
    set_policy(quire, ns, "publishRate",
               {"publishThrottlingRateInMsg": 50, "publishThrottlingRateInByte": -1})
    client = new_client(quire.service_url)
    try:
        p = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
        times = receipt_times(p, 200)
        limited = rate_between(times, 80, 199)
        assert limited < 80, limited
        st, _ = http("DELETE", f"{quire.web_url}/admin/v2/namespaces/{ns}/publishRate")
        assert st == 204
        settle()
        times = receipt_times(p, 1000)
        free = rate_between(times, 0, 999)
        print(f"50 msg/s limit: {limited:.1f} msg/s; removed: {free:.1f} msg/s")
        assert free > 150, free
    finally:
        client.close()



def test_unrelated_policy_change_leaves_limits_alone(quire):
    """A namespace policy that is not a limit (here a message TTL) reaches every loaded
    topic of the namespace; their limits are resolved again but, being the same, are
    neither reset nor logged (at 100,000 topics that was 100,000 log lines a change).
    A change of a limit is applied and logged once per topic."""
    if getattr(quire, "log_path", None) is None:
        pytest.skip("needs the server's log (a server started by the test)")
    ns = make_namespace(quire)
    topics = [f"persistent://{ns}/skip-{unique('t')}" for _ in range(3)]
    set_policy(quire, ns, "publishRate",
               {"publishThrottlingRateInMsg": 1000, "publishThrottlingRateInByte": -1})
    client = new_client(quire.service_url)

    def limit_lines():
        text = Path(quire.log_path).read_text(errors="replace")
        return {t: sum(1 for line in text.splitlines()
                       if "[limits]" in line and line.split("[limits] ", 1)[-1].startswith(t + ":"))
                for t in topics}

    try:
        producers = [client.create_producer(t) for t in topics]
        for p in producers:
            p.send(b"x")
        set_policy(quire, ns, "publishRate",
                   {"publishThrottlingRateInMsg": 500, "publishThrottlingRateInByte": -1})
        deadline = time.monotonic() + 10
        while min(limit_lines().values()) < 1 and time.monotonic() < deadline:
            time.sleep(0.1)
        settle()  # every topic's line of the change in (one more at load is allowed)
        before = limit_lines()
        assert all(n >= 1 for n in before.values()), before  # a limit change is logged
        set_policy(quire, ns, "messageTTL", 3600)
        settle()
        assert limit_lines() == before, (before, limit_lines())  # the TTL: no line
        # A limit changed after the TTL is logged once more per topic: the policies do
        # reach the topics, and the TTL's change, delivered before, added nothing.
        set_policy(quire, ns, "publishRate",
                   {"publishThrottlingRateInMsg": 250, "publishThrottlingRateInByte": -1})
        want = {t: n + 1 for t, n in before.items()}
        deadline = time.monotonic() + 10
        while limit_lines() != want and time.monotonic() < deadline:
            time.sleep(0.1)
        settle()
        assert limit_lines() == want, (want, limit_lines())
        for p in producers:
            p.send(b"y")  # still publishing under the same limit
    finally:
        client.close()


def test_publish_byte_rate(quire):
    """publishThrottlingRateInByte 20 KB/s with 1 KB messages: ~20 msg/s."""
    ns = make_namespace(quire)
    topic = f"persistent://{ns}/bytes-{unique('t')}"
    set_policy(quire, ns, "publishRate",
               {"publishThrottlingRateInMsg": -1, "publishThrottlingRateInByte": 20000})
    client = new_client(quire.service_url)
    try:
        p = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
        times = receipt_times(p, 100, payload=lambda i: b"x" * 1000)
        rate = rate_between(times, 30, 99)
        print(f"byte-limited rate: {rate:.1f} msg/s (expected ~20)")
        assert 13 <= rate <= 28, rate
    finally:
        client.close()


# ------------------------------------------------------------------ dispatch --

def _measure_dispatch(client, topic, sub, n, skip):
    c = client.subscribe(topic, sub, initial_position=pulsar.InitialPosition.Earliest,
                         consumer_type=pulsar.ConsumerType.Shared)
    times = []
    try:
        for _ in range(n):
            m = c.receive(timeout_millis=15000)
            c.acknowledge(m)
            times.append(time.monotonic())
    finally:
        c.close()
    return (n - 1 - skip) / (times[-1] - times[skip])


def test_topic_dispatch_rate(quire):
    ns = make_namespace(quire)
    topic = f"persistent://{ns}/disp-{unique('t')}"
    client = new_client(quire.service_url)
    try:
        p = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
        receipt_times(p, 600)
        set_policy(quire, ns, "dispatchRate",
                   {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": -1,
                    "ratePeriodInSecond": 1, "relativeToPublishRate": False})
        settle()
        rate = _measure_dispatch(client, topic, "s1", 600, 200)
        print(f"dispatch rate with a 100 msg/s topic limit: {rate:.1f} msg/s")
        assert 70 <= rate <= 140, rate
    finally:
        client.close()


def test_subscription_dispatch_rate_and_period(quire):
    """subscriptionDispatchRate 100 messages per 2 s: ~50 msg/s per subscription."""
    ns = make_namespace(quire)
    topic = f"persistent://{ns}/subdisp-{unique('t')}"
    set_policy(quire, ns, "subscriptionDispatchRate",
               {"dispatchThrottlingRateInMsg": 100, "dispatchThrottlingRateInByte": -1,
                "ratePeriodInSecond": 2, "relativeToPublishRate": False})
    client = new_client(quire.service_url)
    try:
        p = client.create_producer(topic, batching_enabled=False, block_if_queue_full=True)
        receipt_times(p, 350)
        rate = _measure_dispatch(client, topic, "s1", 350, 150)
        print(f"subscription dispatch rate with 100 msg / 2 s: {rate:.1f} msg/s")
        assert 35 <= rate <= 70, rate
    finally:
        client.close()


# ---------------------------------------------------------------- admission --

def test_max_producers_per_topic(quire):
    ns = make_namespace(quire)
    topic = f"persistent://{ns}/mp-{unique('t')}"
    set_policy(quire, ns, "maxProducersPerTopic", 2)
    client = new_client(quire.service_url)
    try:
        a = client.create_producer(topic)
        b = client.create_producer(topic)
        with pytest.raises(pulsar.ProducerBusy):
            client.create_producer(topic)
        b.close()
        c = client.create_producer(topic)  # room again
        c.send(b"ok")
        a.close()
        c.close()
    finally:
        client.close()


def test_max_consumers_per_topic_and_subscription(quire):
    ns = make_namespace(quire)
    topic = f"persistent://{ns}/mc-{unique('t')}"
    set_policy(quire, ns, "maxConsumersPerTopic", 3)
    set_policy(quire, ns, "maxConsumersPerSubscription", 2)
    client = new_client(quire.service_url)
    try:
        shared = pulsar.ConsumerType.Shared
        c1 = client.subscribe(topic, "s1", consumer_type=shared)
        c2 = client.subscribe(topic, "s1", consumer_type=shared)
        with pytest.raises(pulsar.ConsumerBusy):
            client.subscribe(topic, "s1", consumer_type=shared)
        c3 = client.subscribe(topic, "s2", consumer_type=shared)
        with pytest.raises(pulsar.ConsumerBusy):
            client.subscribe(topic, "s3", consumer_type=shared)
        c3.close()
        c4 = client.subscribe(topic, "s3", consumer_type=shared)
        for c in (c1, c2, c4):
            c.close()
    finally:
        client.close()


def test_max_unacked_per_consumer_blocks_until_acks(quire):
    ns = make_namespace(quire)
    topic = f"persistent://{ns}/unacked-{unique('t')}"
    set_policy(quire, ns, "maxUnackedMessagesPerConsumer", 10)
    client = new_client(quire.service_url)
    try:
        c = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared,
                             initial_position=pulsar.InitialPosition.Earliest)
        p = client.create_producer(topic, batching_enabled=False)
        for i in range(50):
            p.send(f"u-{i}".encode())
        held = []
        while True:
            try:
                held.append(c.receive(timeout_millis=1500))
            except pulsar.Timeout:
                break
        assert len(held) == 10, len(held)  # blocked at the limit
        assert _sub_stats(quire, topic, "s")["consumers"][0]["blockedConsumerOnUnackedMsgs"] is True
        for m in held[:5]:
            c.acknowledge(m)  # down to half: unblocked
        more = []
        while True:
            try:
                more.append(c.receive(timeout_millis=1500))
            except pulsar.Timeout:
                break
        assert len(more) == 5, len(more)  # up to the limit again
        for m in held[5:] + more:
            c.acknowledge(m)
        rest = []
        while len(rest) < 35:
            m = c.receive(timeout_millis=5000)
            c.acknowledge(m)
            rest.append(m)
        seen = [m.data() for m in held + more + rest]
        assert sorted(seen) == sorted(f"u-{i}".encode() for i in range(50))
        for _ in range(50):  # the acks reach the broker in the background
            if not _sub_stats(quire, topic, "s")["consumers"][0]["blockedConsumerOnUnackedMsgs"]:
                break
            time.sleep(0.1)
        assert _sub_stats(quire, topic, "s")["consumers"][0]["blockedConsumerOnUnackedMsgs"] is False
        c.close()
    finally:
        client.close()


def _sub_stats(srv, topic, sub):
    st, body = http_json("GET", f"{srv.web_url}/admin/v2/{topic.replace('://', '/')}/stats")
    assert st == 200, (st, body)
    return body["subscriptions"][sub]


def test_max_unacked_per_subscription_in_stats(quire):
    ns = make_namespace(quire)
    topic = f"persistent://{ns}/unacked-sub-{unique('t')}"
    set_policy(quire, ns, "maxUnackedMessagesPerSubscription", 6)
    client = new_client(quire.service_url)
    try:
        shared = pulsar.ConsumerType.Shared
        c1 = client.subscribe(topic, "s", consumer_type=shared,
                              initial_position=pulsar.InitialPosition.Earliest)
        c2 = client.subscribe(topic, "s", consumer_type=shared)
        p = client.create_producer(topic, batching_enabled=False)
        for i in range(20):
            p.send(f"v-{i}".encode())
        held = []
        for c in (c1, c2):
            while True:
                try:
                    held.append((c, c.receive(timeout_millis=1500)))
                except pulsar.Timeout:
                    break
        assert len(held) == 6, len(held)  # both consumers together
        sub = _sub_stats(quire, topic, "s")
        assert sub["blockedSubscriptionOnUnackedMsgs"] is True, sub
        assert sub["unackedMessages"] == 6, sub
        assert all(c["blockedConsumerOnUnackedMsgs"] is False for c in sub["consumers"]), sub
        for c, m in held:
            c.acknowledge(m)
        got = len(held)
        for _ in range(200):  # the rest, acknowledged as they come
            if got == 20:
                break
            for c in (c1, c2):
                try:
                    c.acknowledge(c.receive(timeout_millis=100))
                    got += 1
                except pulsar.Timeout:
                    pass
        assert got == 20
        for _ in range(50):  # the acks reach the broker in the background
            if not _sub_stats(quire, topic, "s")["blockedSubscriptionOnUnackedMsgs"]:
                break
            time.sleep(0.1)
        assert _sub_stats(quire, topic, "s")["blockedSubscriptionOnUnackedMsgs"] is False
    finally:
        client.close()


def test_max_topics_per_namespace(quire):
    ns = make_namespace(quire)
    set_policy(quire, ns, "maxTopicsPerNamespace", 3)
    base = f"{quire.web_url}/admin/v2/persistent/{ns}"
    assert http("PUT", f"{base}/t1", "{}")[0] == 204
    assert http("PUT", f"{base}/t2", "{}")[0] == 204
    st, body = http_json("PUT", f"{base}/t3/partitions", "2")
    assert st == 412, (st, body)
    assert body["reason"] == "Exceed maximum number of topics in namespace.", body
    assert http("PUT", f"{base}/t3", "{}")[0] == 204
    st, body = http_json("PUT", f"{base}/t4", "{}")
    assert st == 412, (st, body)
    client = new_client(quire.service_url, operation_timeout_seconds=10)
    try:
        with pytest.raises(pulsar.NotAllowedError):
            client.create_producer(f"persistent://{ns}/auto-created")
        # Existing topics stay usable, also when loaded again with the
        # namespace full (found registered, not counted as new).
        client.create_producer(f"persistent://{ns}/t1").close()
        assert http("PUT", f"{base}/t1/unload")[0] == 204
        p = client.create_producer(f"persistent://{ns}/t1")
        p.send(b"still usable")
        p.close()
    finally:
        client.close()


# ---------------------------------------------------------------- bad input --

@pytest.mark.parametrize("what,value,status", [
    ("publishRate", {"publishThrottlingRateInMsg": -5}, 412),
    ("publishRate", {"publishThrottlingRateInMsg": 1.5}, 400),
    ("publishRate", {"publishThrottlingRateInByte": "fast"}, 400),
    ("publishRate", [200], 400),
    ("dispatchRate", {"dispatchThrottlingRateInMsg": -2}, 412),
    ("dispatchRate", {"dispatchThrottlingRateInMsg": 10, "ratePeriodInSecond": 0}, 412),
    ("dispatchRate", {"dispatchThrottlingRateInMsg": 10, "relativeToPublishRate": "yes"}, 400),
    ("subscriptionDispatchRate", {"dispatchThrottlingRateInByte": 1e30}, 400),
    ("maxProducersPerTopic", -1, 412),
    ("maxConsumersPerTopic", "3", 400),
    ("maxUnackedMessagesPerConsumer", 2.5, 400),
    ("maxUnackedMessagesPerSubscription", -3, 412),
    ("maxTopicsPerNamespace", -1, 412),
])
def test_bad_limits_refused(quire, what, value, status):
    ns = make_namespace(quire, "rlbad")
    set_policy(quire, ns, what, value, expect=status)
    st, policies = http_json("GET", f"{quire.web_url}/admin/v2/namespaces/{ns}")
    assert st == 200
    assert not policies.get("publishMaxMessageRate"), policies  # nothing stored


# ------------------------------------------------------------------ isolation --

PERF = Path(os.environ.get("QUIRE_PERF_BIN", str(QUIRE_BIN.parents[1] / "tools" / "quire-perf")))


def _tenant_b_run(service_url, topic, rate, seconds):
    """A fixed-rate producer: message i is due at start + i / rate; latency is measured
    from its due time to its receipt (a stall counts in full). Returns (msg/s, latencies ms)."""
    client = new_client(service_url)
    try:
        p = client.create_producer(topic, batching_enabled=False)
        for _ in range(20):
            p.send(b"warm")
        n = int(rate * seconds)
        lat = []
        start = time.monotonic()
        for i in range(n):
            due = start + i / rate
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            p.send(b"b" * 100)
            lat.append((time.monotonic() - due) * 1000.0)
        elapsed = time.monotonic() - start
        p.close()
        return n / elapsed, lat
    finally:
        client.close()


def _summary(tput, lat):
    return {"msg_s": round(tput, 1), "p50_ms": round(percentile(lat, 50), 3),
            "p95_ms": round(percentile(lat, 95), 3), "p99_ms": round(percentile(lat, 99), 3),
            "mean_ms": round(statistics.mean(lat), 3)}


def _tenant_a_perf(srv, topic, rate, seconds, report):
    """quire-perf producing to tenant A's topic at `rate` msg/s (4 producers, 100 B)."""
    return subprocess.Popen(
        [str(PERF), "produce", "--service-url", srv.service_url, "--topics", topic,
         "--no-partitions", "--producers-per-topic", "4", "--rate", str(rate),
         "--size", "100", "--disable-batching", "--max-pending", "50",
         "--warmup-seconds", "1", "--seconds", str(seconds), "--report-interval-s", "60",
         "--json", str(report)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT)


def _b_while_a(srv, topic_a, topic_b, a_rate, rate_b, seconds, report):
    perf = _tenant_a_perf(srv, topic_a, a_rate, seconds + 2, report)
    try:
        time.sleep(1.5)  # A is running (and, when flooding, throttled)
        b = _tenant_b_run(srv.service_url, topic_b, rate_b, seconds)
    finally:
        out, _ = perf.communicate(timeout=90)
    assert perf.returncode == 0, out.decode(errors="replace")[-2000:]
    res = json.loads(report.read_text())
    assert res["send_errors"] == 0, res
    return b, round(res["produce_msg_per_s"], 1)


@pytest.mark.skipif(not PERF.exists(), reason=f"{PERF} not built (ninja quire-perf)")
def test_broker_publish_buffer_bound_pauses_without_loss():
    """maxMessagePublishBufferSizeInMB: with a 1 MB bound over all connections,
    four clients (one connection each) sending 64 KiB messages without waiting
    get paused (the metric counts it) and resumed; every message is acknowledged
    and consumed, in order, and the buffer is empty afterwards."""
    from conftest import QuireServer
    srv = QuireServer(extra_args=["--maxMessagePublishBufferSizeInMB=1"]).start()
    clients = []
    try:
        n, size = 150, 64 * 1024
        topics = [f"persistent://public/default/{unique('pbuf')}" for _ in range(4)]
        producers = []
        for t in topics:
            c = new_client(srv.service_url)
            clients.append(c)
            producers.append(c.create_producer(t, batching_enabled=False,
                                               max_pending_messages=n, send_timeout_millis=60000))
        failures = []

        def done(res, _msg_id):
            if res != pulsar.Result.Ok:
                failures.append(res)

        for i in range(n):
            for k, p in enumerate(producers):
                p.send_async(bytes([k]) + i.to_bytes(4, "big") + b"x" * (size - 5), done)
        for p in producers:
            p.flush()
        assert failures == []
        st, body = http("GET", f"{srv.web_url}/metrics")
        assert st == 200
        metrics = body.decode()

        def metric(name):
            for line in metrics.splitlines():
                if line.startswith(name + "{"):
                    return float(line.rsplit(" ", 1)[1])
            raise AssertionError(f"{name} not in /metrics")

        assert metric("quire_broker_publish_buffer_pauses_total") >= 1
        assert metric("quire_broker_publish_buffer_bytes") == 0
        assert metric("pulsar_broker_throttled_connections_global_limit") == 0
        for k, t in enumerate(topics):
            got = consume_all(clients[k], t, n)
            assert [g[0] for g in got] == [k] * n
            assert [int.from_bytes(g[1:5], "big") for g in got] == list(range(n))
    finally:
        for c in clients:
            c.close()
        srv.cleanup()


def test_tenant_isolation_under_flood(quire, tmp_path):
    """Tenant B (fixed 100 msg/s, sync sends, latency from each message's due time) is
    measured alone, next to tenant A publishing at exactly its quota, and next to tenant
    A offering 10x its quota (4 quire-perf producers). The flood is held to the quota by
    back-pressure; what B can still feel is A's admitted load, on the shared storage."""
    ns_a = make_namespace(quire, "tenant-a")
    ns_b = make_namespace(quire, "tenant-b")
    quota = 200
    set_policy(quire, ns_a, "publishRate",
               {"publishThrottlingRateInMsg": quota, "publishThrottlingRateInByte": -1})
    topic_a = f"persistent://{ns_a}/flood"
    topic_b = f"persistent://{ns_b}/steady"
    rate_b, seconds = 100, 6

    alone1 = _summary(*_tenant_b_run(quire.service_url, topic_b, rate_b, seconds))
    b, a_quota_rate = _b_while_a(quire, topic_a, topic_b, quota, rate_b, seconds,
                                 tmp_path / "quota.json")
    at_quota = _summary(*b)
    b, a_flood_rate = _b_while_a(quire, topic_a, topic_b, 10 * quota, rate_b, seconds,
                                 tmp_path / "flood.json")
    flooded = _summary(*b)
    alone2 = _summary(*_tenant_b_run(quire.service_url, topic_b, rate_b, seconds))
    alone = {k: round((alone1[k] + alone2[k]) / 2, 3) for k in alone1}

    print(f"\nisolation: tenant A quota {quota} msg/s; A at its quota: {a_quota_rate} msg/s "
          f"admitted; A offering {10 * quota} msg/s: {a_flood_rate} msg/s admitted")
    print(f"isolation: B alone (1st)           {alone1}")
    print(f"isolation: B alone (2nd)           {alone2}")
    print(f"isolation: B next to A at quota    {at_quota}")
    print(f"isolation: B next to A flooding    {flooded}")
    for k in ("msg_s", "p50_ms", "p95_ms", "p99_ms"):
        print(f"isolation: B {k}: flood vs alone {flooded[k] / alone[k] - 1:+.1%}, "
              f"flood vs A-at-quota {flooded[k] / at_quota[k] - 1:+.1%}")
    # A is held to its quota: back-pressure, no errors (quire-perf exits 0, no SEND_ERROR).
    assert a_flood_rate <= quota * 1.3, a_flood_rate
    # B keeps its throughput (fixed-rate producer: within 10%).
    assert flooded["msg_s"] >= alone["msg_s"] * 0.9, (alone, flooded)
    # Latency: the goal is within 10%; the tail on this shared 2-core machine is dominated
    # by fsync stalls that vary several-fold between two runs of B alone, so the assertion
    # only catches a gross loss of isolation. The printed figures are what gets reported.
    assert flooded["p50_ms"] <= max(alone["p50_ms"], at_quota["p50_ms"]) * 3 + 3.0, \
        (alone, at_quota, flooded)
