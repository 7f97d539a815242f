"""Delayed delivery: deliver_after / deliver_at on Shared and Key_Shared subscriptions.

No message arrives before its deliver_at_time (checked against the wall clock the
client and the server share, with TOLERANCE_MS), every one arrives after it;
immediate and delayed messages interleave; a kill -9 with delayed messages pending
loses none and releases none early; Exclusive ignores the delay (as Pulsar)."""
import time
import urllib.parse
from datetime import timedelta

import pulsar
import pytest

from compat_helpers import assert_nothing_more, http_json, new_client, short_name

TOLERANCE_MS = 5  # clock reads on one host: the broker releases at >= deliver_at
E = pulsar.InitialPosition.Earliest


def now_ms():
    return int(time.time() * 1000)


def receive_timed(consumer, n, timeout_ms=20000):
    """n (message, receive wall time ms) pairs."""
    out = []
    deadline = time.monotonic() + timeout_ms / 1000
    while len(out) < n:
        left = int((deadline - time.monotonic()) * 1000)
        if left <= 0:
            raise AssertionError(f"received {len(out)} of {n} messages")
        try:
            m = consumer.receive(timeout_millis=left)
        except pulsar.Timeout:
            raise AssertionError(f"received {len(out)} of {n} messages")
        out.append((m, now_ms()))
    return out


def sub_stats(srv, topic, sub):
    st, body = http_json("GET", f"{srv.web_url}/admin/v2/persistent/public/default/"
                                f"{urllib.parse.quote(short_name(topic))}/stats")
    assert st == 200, body
    return body["subscriptions"][sub]


def internal_cursor(srv, topic, sub):
    st, body = http_json("GET", f"{srv.web_url}/admin/v2/persistent/public/default/"
                                f"{urllib.parse.quote(short_name(topic))}/internalStats")
    assert st == 200, body
    return body["cursors"][sub]


def test_deliver_after_shared_not_before_its_time(client, topic):
    consumer = client.subscribe(topic, "s", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    delay_ms = 3000
    due = {}
    for i in range(5):
        t0 = now_ms()
        producer.send(f"d-{i}".encode(), deliver_after=timedelta(milliseconds=delay_ms))
        due[f"d-{i}".encode()] = t0 + delay_ms
    # Nothing during most of the delay.
    try:
        m = consumer.receive(timeout_millis=delay_ms - 1000)
        raise AssertionError(f"{m.data()!r} arrived early at {now_ms()}, due {due[m.data()]}")
    except pulsar.Timeout:
        pass
    got = receive_timed(consumer, 5)
    for m, at in got:
        # the client stamps deliver_at from its own clock after t0: >= t0 + delay
        assert at + TOLERANCE_MS >= due[m.data()], (m.data(), at, due[m.data()])
        consumer.acknowledge(m)
    assert sorted(m.data() for m, _ in got) == sorted(due)
    assert_nothing_more(consumer)


def test_deliver_at_absolute_key_shared(client, topic):
    consumer = client.subscribe(topic, "ks", consumer_type=pulsar.ConsumerType.KeyShared)
    producer = client.create_producer(topic, batching_enabled=False)
    at = now_ms() + 2500
    for i in range(6):
        producer.send(f"k-{i}".encode(), partition_key=f"key-{i % 3}", deliver_at=at)
    got = receive_timed(consumer, 6)
    for m, t in got:
        assert t + TOLERANCE_MS >= at, (m.data(), t, at)
        consumer.acknowledge(m)
    # per-key order holds among delayed messages released together
    for k in range(3):
        seq = [m.data() for m, _ in got if m.partition_key() == f"key-{k}"]
        assert seq == [f"k-{i}".encode() for i in range(6) if i % 3 == k]


def test_interleaved_immediate_and_delayed(quire, client, topic):
    consumer = client.subscribe(topic, "mix", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    delay_ms = 3000
    due = {}
    for i in range(20):
        data = f"m-{i:02d}".encode()
        if i % 2:
            due[data] = now_ms() + delay_ms
            producer.send(data, deliver_after=timedelta(milliseconds=delay_ms))
        else:
            producer.send(data)
    # the immediate ones come at once, in order
    first = receive_timed(consumer, 10, timeout_ms=delay_ms - 500)
    assert [m.data() for m, _ in first] == [f"m-{i:02d}".encode() for i in range(0, 20, 2)]
    for m, _ in first:
        consumer.acknowledge(m)
    # delivered ones are acknowledged while the delayed ones stay unacknowledged
    deadline = time.monotonic() + 5
    while True:
        st = sub_stats(quire, topic, "mix")
        if st["msgBacklog"] == 10 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert st["msgBacklog"] == 10, st
    assert st.get("msgDelayed", 10) in (10, 0), st
    later = receive_timed(consumer, 10)
    for m, at in later:
        assert at + TOLERANCE_MS >= due[m.data()], (m.data(), at, due[m.data()])
        consumer.acknowledge(m)
    assert sorted(m.data() for m, _ in later) == sorted(due)
    # once they are acknowledged too the mark-delete passes everything
    deadline = time.monotonic() + 5
    while True:
        cur = internal_cursor(quire, topic, "mix")
        st = sub_stats(quire, topic, "mix")
        if st["msgBacklog"] == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert st["msgBacklog"] == 0, (st, cur)
    assert_nothing_more(consumer)


def test_exclusive_ignores_the_delay(client, topic):
    consumer = client.subscribe(topic, "ex", consumer_type=pulsar.ConsumerType.Exclusive)
    producer = client.create_producer(topic, batching_enabled=False)
    t0 = now_ms()
    producer.send(b"x", deliver_after=timedelta(seconds=30))
    m = consumer.receive(timeout_millis=5000)
    assert m.data() == b"x"
    assert now_ms() - t0 < 5000


def test_failover_ignores_the_delay(client, topic):
    consumer = client.subscribe(topic, "fo", consumer_type=pulsar.ConsumerType.Failover)
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"f", deliver_after=timedelta(seconds=30))
    assert consumer.receive(timeout_millis=5000).data() == b"f"


def test_consumer_leaving_does_not_release_early(client, topic):
    c1 = client.subscribe(topic, "leave", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    due = now_ms() + 3000
    for i in range(3):
        producer.send(f"l-{i}".encode(), deliver_at=due)
    c1.close()
    c2 = client.subscribe(topic, "leave", consumer_type=pulsar.ConsumerType.Shared)
    got = receive_timed(c2, 3)
    for m, at in got:
        assert at + TOLERANCE_MS >= due
        c2.acknowledge(m)


@pytest.mark.needs_restart
def test_kill9_with_delayed_pending_loses_none_releases_none_early(fresh_quire):
    srv = fresh_quire
    topic = "persistent://public/default/delayed-crash"
    client = new_client(srv.service_url)
    consumer = client.subscribe(topic, "crash", consumer_type=pulsar.ConsumerType.Shared)
    producer = client.create_producer(topic, batching_enabled=False)
    due = {}
    base = now_ms()
    for i in range(30):
        data = f"c-{i:02d}".encode()
        if i % 3 == 0:
            producer.send(data)  # immediate
        else:
            due[data] = base + 6000 + 100 * i
            producer.send(data, deliver_at=due[data])
    imm = receive_timed(consumer, 10, timeout_ms=4000)
    assert all(m.data() not in due for m, _ in imm)
    for m, _ in imm:
        consumer.acknowledge(m)
    time.sleep(0.5)  # the acks persist (cursor persist interval 100 ms)
    srv.restart(kill=True)
    try:
        client.close()
    except Exception:
        pass
    client = new_client(srv.service_url)
    consumer = client.subscribe(topic, "crash", consumer_type=pulsar.ConsumerType.Shared)
    got = receive_timed(consumer, len(due), timeout_ms=30000)
    for m, at in got:
        assert m.data() in due, f"an acknowledged immediate message came back: {m.data()!r}"
        assert at + TOLERANCE_MS >= due[m.data()], (m.data(), at, due[m.data()])
        consumer.acknowledge(m)
    assert sorted(m.data() for m, _ in got) == sorted(due)
    assert_nothing_more(consumer, quiet_ms=1500)
    client.close()
