"""Retention and message TTL (namespace policies), and expiry of inactive subscriptions.

The server of this module rolls ledgers every 5 entries
(--managedLedgerMaxEntriesPerLedger=5, --managedLedgerMinLedgerRolloverTimeMinutes=0, as
Pulsar's own tests do) so that consumed ledgers can be trimmed, and
checks TTL every second (quireMessageExpiryCheckIntervalSeconds, Quire's own key; Pulsar
only has messageExpiryCheckIntervalInMinutes). Each test uses a namespace of its own."""
import time
import urllib.parse
import uuid

import pulsar
import pytest

from compat_helpers import (assert_nothing_more, drain, drain_reader, http, http_json,
                            new_client, receive_n)
from conftest import EXTERNAL, QuireServer

E = pulsar.InitialPosition.Earliest

pytestmark = pytest.mark.skipif(EXTERNAL, reason="needs server flags (ledger size, check interval)")


@pytest.fixture(scope="module")
def srv():
    s = QuireServer(extra_args=["--managedLedgerMaxEntriesPerLedger=5",
                                "--managedLedgerMinLedgerRolloverTimeMinutes=0",
                                "--quireMessageExpiryCheckIntervalSeconds=1"]).start()
    yield s
    s.cleanup()


@pytest.fixture
def cl(srv):
    c = new_client(srv.service_url)
    yield c
    c.close()


def new_namespace(srv, **policies):
    ns = f"public/ns-{uuid.uuid4().hex[:8]}"
    st, body = http("PUT", f"{srv.web_url}/admin/v2/namespaces/{ns}", "{}")
    assert st in (200, 204), body
    for name, value in policies.items():
        st, body = http("POST", f"{srv.web_url}/admin/v2/namespaces/{ns}/{name}", value)
        assert st in (200, 204), (name, st, body)
    time.sleep(0.3)  # the broker's policies cache follows a metadata watch
    return ns


def internal_stats(srv, topic):
    path = topic.split("://", 1)[1]
    st, body = http_json("GET", f"{srv.web_url}/admin/v2/persistent/{path}/internalStats")
    assert st == 200, body
    return body


def stats(srv, topic):
    path = topic.split("://", 1)[1]
    st, body = http_json("GET", f"{srv.web_url}/admin/v2/persistent/{path}/stats")
    assert st == 200, body
    return body


def produce_and_consume(cl, topic, n, size=10):
    consumer = cl.subscribe(topic, "sub", initial_position=E)
    producer = cl.create_producer(topic, batching_enabled=False)
    for i in range(n):
        producer.send(f"{i:04d}".encode().ljust(size, b"."))
    msgs = receive_n(consumer, n)
    consumer.acknowledge_cumulative(msgs[-1])
    producer.close()
    consumer.close()
    return msgs


def read_all(cl, topic):
    reader = cl.create_reader(topic, pulsar.MessageId.earliest)
    out = drain_reader(reader, quiet_ms=1500)
    reader.close()
    return out


def wait_for(pred, timeout=10.0, step=0.2):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


# ----------------------------------------------------------------- retention --

def test_infinite_retention_keeps_consumed_ledgers(srv, cl):
    ns = new_namespace(srv, retention='{"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}')
    topic = f"persistent://{ns}/kept"
    produce_and_consume(cl, topic, 20)
    time.sleep(1.0)
    assert len(internal_stats(srv, topic)["ledgers"]) >= 4
    got = read_all(cl, topic)
    assert [m.data()[:4] for m in got] == [f"{i:04d}".encode() for i in range(20)]


def test_no_retention_deletes_consumed_ledgers(srv, cl):
    ns = new_namespace(srv)  # Pulsar's default: 0 minutes / 0 MB
    topic = f"persistent://{ns}/gone"
    produce_and_consume(cl, topic, 20)

    def trimmed():
        ledgers = internal_stats(srv, topic)["ledgers"]
        return len(ledgers) <= 2 and ledgers

    assert wait_for(trimmed), internal_stats(srv, topic)
    got = read_all(cl, topic)
    # Only the ledger still being written (up to 5 entries) may remain: the current
    # ledger is never deleted, and Quire rolls over on the next add.
    ids = [int(m.data()[:4]) for m in got]
    assert len(ids) <= 5 and ids == list(range(20 - len(ids), 20)), ids


def test_size_retention_keeps_the_newest_ledgers(srv, cl):
    # 20 entries of 100 KB in ledgers of 5 (500 KB each); 1 MB keeps at most two
    ns = new_namespace(srv, retention='{"retentionTimeInMinutes": -1, "retentionSizeInMB": 1}')
    topic = f"persistent://{ns}/sized"
    produce_and_consume(cl, topic, 20, size=100_000)
    wait_for(lambda: len(internal_stats(srv, topic)["ledgers"]) <= 3)
    got = read_all(cl, topic)
    ids = [int(m.data()[:4]) for m in got]
    assert 0 < len(ids) < 20, ids
    assert ids == list(range(20 - len(ids), 20))  # the newest ones, contiguous


def test_retention_is_applied_to_a_loaded_topic(srv, cl):
    ns = new_namespace(srv)
    topic = f"persistent://{ns}/later"
    produce_and_consume(cl, topic, 3)
    st, body = http("POST", f"{srv.web_url}/admin/v2/namespaces/{ns}/retention",
                    '{"retentionTimeInMinutes": -1, "retentionSizeInMB": -1}')
    assert st in (200, 204), body
    time.sleep(0.5)
    produce_and_consume(cl, topic, 12)
    time.sleep(1.0)
    got = read_all(cl, topic)
    assert len(got) >= 12


# ----------------------------------------------------------------------- TTL --

def test_ttl_expires_unacknowledged_messages(srv, cl):
    ns = new_namespace(srv, messageTTL="2")
    topic = f"persistent://{ns}/ttl"
    c = cl.subscribe(topic, "idle", initial_position=E)
    c.close()
    producer = cl.create_producer(topic, batching_enabled=False)
    for i in range(10):
        producer.send(f"old-{i}".encode())
    assert stats(srv, topic)["subscriptions"]["idle"]["msgBacklog"] == 10

    def expired():
        return stats(srv, topic)["subscriptions"]["idle"]["msgBacklog"] == 0

    assert wait_for(expired, timeout=8), stats(srv, topic)
    assert stats(srv, topic)["subscriptions"]["idle"]["totalMsgExpired"] == 10
    # the expiry shows in the rate of the stats window that holds it (windows of at
    # least a second, from one stats read to a later one)
    assert wait_for(lambda: stats(srv, topic)["subscriptions"]["idle"]["msgRateExpired"] > 0,
                    timeout=3), stats(srv, topic)
    # newer messages are not expired with them
    for i in range(5):
        producer.send(f"new-{i}".encode())
    c = cl.subscribe(topic, "idle", initial_position=E)
    got = receive_n(c, 5, ack=True)
    assert [m.data() for m in got] == [f"new-{i}".encode() for i in range(5)]
    assert_nothing_more(c)
    # internal stats: the mark-delete moved (an acknowledgement like any other)
    cur = internal_stats(srv, topic)["cursors"]["idle"]
    assert cur["markDeletePosition"] != "-1:-1"


def test_ttl_only_expires_messages_older_than_it(srv, cl):
    ns = new_namespace(srv, messageTTL="3")
    topic = f"persistent://{ns}/ttl-split"
    c = cl.subscribe(topic, "half", initial_position=E)
    c.close()
    producer = cl.create_producer(topic, batching_enabled=False)
    for i in range(5):
        producer.send(f"a-{i}".encode())
    time.sleep(4.5)  # the first five are past the TTL and a check (every second) ran
    for i in range(5):
        producer.send(f"b-{i}".encode())
    c = cl.subscribe(topic, "half", initial_position=E)
    got = drain(c, quiet_ms=1000, ack=True)
    assert [m.data() for m in got] == [f"b-{i}".encode() for i in range(5)]


def test_ttl_on_shared_subscription_with_holes(srv, cl):
    ns = new_namespace(srv, messageTTL="2")
    topic = f"persistent://{ns}/ttl-holes"
    c = cl.subscribe(topic, "sh", consumer_type=pulsar.ConsumerType.Shared,
                     initial_position=E, receiver_queue_size=1)
    producer = cl.create_producer(topic, batching_enabled=False)
    for i in range(6):
        producer.send(f"h-{i}".encode())
    m = c.receive(timeout_millis=5000)
    c.acknowledge(m)
    c.close()
    assert wait_for(lambda: stats(srv, topic)["subscriptions"]["sh"]["msgBacklog"] == 0,
                    timeout=8), stats(srv, topic)


def test_negative_ttl_refused(srv):
    ns = new_namespace(srv)
    st, _ = http("POST", f"{srv.web_url}/admin/v2/namespaces/{ns}/messageTTL", "-5")
    assert st == 412
    st, _ = http("POST", f"{srv.web_url}/admin/v2/namespaces/{ns}/messageTTL", '"x"')
    assert st == 400


# ----------------------------------------------------- subscription expiry --

@pytest.mark.needs_restart
def test_inactive_subscription_expires():
    s = QuireServer(extra_args=["--quireSubscriptionExpirationTimeSeconds=2",
                                "--quireSubscriptionExpiryCheckIntervalSeconds=1"]).start()
    try:
        c = new_client(s.service_url)
        topic = "persistent://public/default/sub-expiry"
        idle = c.subscribe(topic, "idle", initial_position=E)
        busy = c.subscribe(topic, "busy", initial_position=E)
        idle.close()
        path = urllib.parse.quote("public/default/sub-expiry")

        def subs():
            st, body = http_json("GET", f"{s.web_url}/admin/v2/persistent/{path}/subscriptions")
            assert st == 200, body
            return body

        assert wait_for(lambda: "idle" not in subs(), timeout=10), subs()
        assert "busy" in subs()  # a subscription with a consumer stays
        busy.close()
        c.close()
    finally:
        s.cleanup()


def test_subscription_expiration_time_policy_rest(srv):
    ns = new_namespace(srv)
    base = f"{srv.web_url}/admin/v2/namespaces/{ns}/subscriptionExpirationTime"
    st, _ = http("POST", base, "30")
    assert st in (200, 204)
    st, body = http_json("GET", base)
    assert st == 200 and body == 30
    st, body = http_json("GET", f"{srv.web_url}/admin/v2/namespaces/{ns}")
    assert body["subscription_expiration_time_minutes"] == 30
    st, _ = http("POST", base, "-1")
    assert st == 412
