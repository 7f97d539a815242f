"""Acknowledgements: individual, cumulative, negative, ack timeout, batch-index acks,
unacked messages of a leaving consumer, nothing acked comes back."""
import time

import pulsar
import pytest

from compat_helpers import assert_nothing_more, drain, produce, receive_n, send_all_async

E = pulsar.InitialPosition.Earliest
CT = pulsar.ConsumerType


def _payloads(prefix, n):
    return [f"{prefix}-{i}".encode() for i in range(n)]


def test_individual_acks_survive_reconnect(client, topic):
    c = client.subscribe(topic, "ind", initial_position=E)
    sent = _payloads("i", 20)
    produce(client, topic, sent)
    msgs = receive_n(c, 20)
    for i, m in enumerate(msgs):
        if i % 2 == 0:
            c.acknowledge(m)
    c.close()
    c = client.subscribe(topic, "ind", initial_position=E)
    again = receive_n(c, 10, ack=True)
    assert [m.data() for m in again] == sent[1::2]
    assert_nothing_more(c)
    c.close()
    # Everything acknowledged now: a reconnecting consumer gets nothing
    c = client.subscribe(topic, "ind", initial_position=E)
    assert_nothing_more(c)


def test_acknowledge_by_message_id(client, topic):
    c = client.subscribe(topic, "byid", initial_position=E)
    sent = _payloads("b", 6)
    produce(client, topic, sent)
    msgs = receive_n(c, 6)
    for m in msgs[:3]:
        c.acknowledge(m.message_id())
    c.close()
    c = client.subscribe(topic, "byid", initial_position=E)
    assert [m.data() for m in receive_n(c, 3, ack=True)] == sent[3:]
    assert_nothing_more(c)


def test_cumulative_ack(client, topic):
    c = client.subscribe(topic, "cum", initial_position=E)
    sent = _payloads("c", 10)
    produce(client, topic, sent)
    msgs = receive_n(c, 10)
    c.acknowledge_cumulative(msgs[5])
    c.close()
    c = client.subscribe(topic, "cum", initial_position=E)
    assert [m.data() for m in receive_n(c, 4)] == sent[6:]
    assert_nothing_more(c)


def test_cumulative_ack_on_batch(client, topic):
    c = client.subscribe(topic, "cumb", initial_position=E)
    sent = _payloads("cb", 100)
    produce(client, topic, sent, batching=True, batching_max_messages=10)
    msgs = receive_n(c, 100)
    c.acknowledge_cumulative(msgs[-1])
    c.close()
    c = client.subscribe(topic, "cumb", initial_position=E)
    assert_nothing_more(c)


def test_cumulative_ack_refused_on_shared(client, topic):
    c = client.subscribe(topic, "cums", consumer_type=CT.Shared, initial_position=E)
    produce(client, topic, [b"x"])
    m = receive_n(c, 1)[0]
    with pytest.raises(pulsar.PulsarException):
        c.acknowledge_cumulative(m)


def test_negative_ack_redelivery_count_grows(client, topic):
    c = client.subscribe(topic, "nack", consumer_type=CT.Shared, initial_position=E,
                         negative_ack_redelivery_delay_ms=200)
    produce(client, topic, [b"n-0", b"n-1"])
    first = receive_n(c, 2)
    assert [m.data() for m in first] == [b"n-0", b"n-1"]
    assert [m.redelivery_count() for m in first] == [0, 0]
    c.acknowledge(first[1])
    m = first[0]
    for expected in (1, 2, 3):
        c.negative_acknowledge(m)
        m = receive_n(c, 1, timeout_ms=10000)[0]
        assert m.data() == b"n-0"
        assert m.redelivery_count() == expected
    c.acknowledge(m)
    assert_nothing_more(c)


def test_negative_ack_exclusive_redelivers(client, topic):
    c = client.subscribe(topic, "nackx", initial_position=E, negative_ack_redelivery_delay_ms=200)
    produce(client, topic, _payloads("x", 3))
    msgs = receive_n(c, 3)
    c.acknowledge(msgs[0])
    c.acknowledge(msgs[2])
    c.negative_acknowledge(msgs[1])
    again = receive_n(c, 1)
    assert again[0].data() == b"x-1"
    c.acknowledge(again[0])
    assert_nothing_more(c)


def test_ack_timeout_redelivery(client, topic):
    # The C++ client accepts no ack timeout under 10 s.
    c = client.subscribe(topic, "ackto", consumer_type=CT.Shared, initial_position=E,
                         unacked_messages_timeout_ms=10000)
    produce(client, topic, [b"t-0", b"t-1"])
    msgs = receive_n(c, 2)
    c.acknowledge(msgs[1])
    start = time.monotonic()
    m = receive_n(c, 1, timeout_ms=30000)[0]
    assert m.data() == b"t-0"
    assert time.monotonic() - start > 5, "redelivered long before the ack timeout"
    assert m.redelivery_count() >= 1
    c.acknowledge(m)
    assert_nothing_more(c)


def test_unacked_of_closing_consumer_go_to_other_shared_consumer(client, topic):
    c1 = client.subscribe(topic, "leave", consumer_type=CT.Shared, initial_position=E)
    sent = _payloads("l", 30)
    produce(client, topic, sent)
    got = receive_n(c1, 10)
    for m in got[:5]:
        c1.acknowledge(m)
    c2 = client.subscribe(topic, "leave", consumer_type=CT.Shared, initial_position=E)
    c1.close()
    rest = drain(c2, 2000, ack=True)
    datas = [m.data() for m in rest]
    assert len(datas) == len(set(datas)), "duplicates"
    assert sorted(datas) == sorted(sent[5:]), \
        f"expected the 25 unacked messages, got {len(datas)}: missing {set(sent[5:]) - set(datas)}"
    assert not set(datas) & set(sent[:5]), "acknowledged messages redelivered"


def test_batch_index_ack(client, topic):
    c = client.subscribe(topic, "bia", initial_position=E, batch_index_ack_enabled=True)
    sent = _payloads("bi", 10)
    p = client.create_producer(topic, batching_enabled=True, batching_max_messages=10,
                               batching_max_publish_delay_ms=5000)
    ids = send_all_async(p, sent)
    p.close()
    assert len({(i.ledger_id(), i.entry_id()) for i in ids}) == 1, "not one batch"
    msgs = receive_n(c, 10)
    for m in msgs[:4]:
        c.acknowledge(m)
    c.acknowledge(msgs[7])
    time.sleep(0.5)
    c.close()
    c = client.subscribe(topic, "bia", initial_position=E, batch_index_ack_enabled=True)
    again = receive_n(c, 5, ack=True)
    assert [m.data() for m in again] == [sent[i] for i in (4, 5, 6, 8, 9)]
    assert_nothing_more(c)


def test_redeliver_unacknowledged(client, topic):
    c = client.subscribe(topic, "redel", initial_position=E)
    sent = _payloads("r", 5)
    produce(client, topic, sent)
    msgs = receive_n(c, 5)
    c.acknowledge(msgs[0])
    c.acknowledge(msgs[1])
    time.sleep(0.3)
    c.redeliver_unacknowledged_messages()
    again = receive_n(c, 3, ack=True)
    assert [m.data() for m in again] == sent[2:]
    assert_nothing_more(c)
