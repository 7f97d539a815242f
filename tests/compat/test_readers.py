"""Readers (earliest, latest, from an id inclusive/exclusive, has_message_available),
SEEK by message id and by publish time, GET_LAST_MESSAGE_ID."""
import time

import pulsar
import pytest

from compat_helpers import (assert_nothing_more, drain_reader, mid_key, produce, read_n, receive_n)

E = pulsar.InitialPosition.Earliest


def _payloads(prefix, n):
    return [f"{prefix}-{i}".encode() for i in range(n)]


def _assert_reader_empty(reader, quiet_ms=1000):
    with pytest.raises(pulsar.Timeout):
        m = reader.read_next(timeout_millis=quiet_ms)
        raise AssertionError(f"unexpected message {m.data()!r}")


def test_reader_from_earliest(client, topic):
    sent = _payloads("e", 50)
    produce(client, topic, sent[:25])
    produce(client, topic, sent[25:], batching=True, batching_max_messages=10)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert [m.data() for m in read_n(reader, 50)] == sent
    assert not reader.has_message_available()
    _assert_reader_empty(reader)
    reader.close()


def test_reader_from_latest(client, topic):
    produce(client, topic, _payloads("old", 10))
    reader = client.create_reader(topic, pulsar.MessageId.latest)
    _assert_reader_empty(reader)
    new = _payloads("new", 3)
    produce(client, topic, new)
    assert [m.data() for m in read_n(reader, 3)] == new
    _assert_reader_empty(reader)
    reader.close()


@pytest.mark.parametrize("batching", [False, True], ids=["plain", "batched"])
@pytest.mark.parametrize("inclusive", [False, True], ids=["exclusive", "inclusive"])
def test_reader_from_message_id(client, topic, inclusive, batching):
    sent = _payloads("m", 20)
    ids = produce(client, topic, sent, batching=batching, batching_max_messages=4)
    start = 9
    reader = client.create_reader(topic, ids[start], start_message_id_inclusive=inclusive)
    first = start if inclusive else start + 1
    got = read_n(reader, 20 - first)
    assert [m.data() for m in got] == sent[first:]
    assert mid_key(got[0].message_id()) == mid_key(ids[first])
    _assert_reader_empty(reader)
    reader.close()


def test_has_message_available(client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert not reader.has_message_available()  # empty topic
    producer.send(b"one")
    assert reader.has_message_available()
    assert reader.read_next(timeout_millis=10000).data() == b"one"
    assert not reader.has_message_available()
    producer.send(b"two")
    producer.send(b"three")
    assert reader.has_message_available()
    assert [m.data() for m in read_n(reader, 2)] == [b"two", b"three"]
    assert not reader.has_message_available()
    producer.close()
    reader.close()
    # A reader from latest on a non-empty topic has nothing available
    latest = client.create_reader(topic, pulsar.MessageId.latest)
    assert not latest.has_message_available()
    latest.close()
    # A reader on the last id, inclusive, has exactly that message
    last = client.create_reader(topic, pulsar.MessageId.latest, start_message_id_inclusive=True)
    assert last.has_message_available()
    assert last.read_next(timeout_millis=10000).data() == b"three"
    assert not last.has_message_available()
    last.close()


def test_consumer_seek_by_message_id(client, topic):
    sent = _payloads("s", 10)
    ids = produce(client, topic, sent)
    c = client.subscribe(topic, "seek", initial_position=E)
    receive_n(c, 10, ack=True)
    assert_nothing_more(c, 500)
    c.seek(ids[3])
    # After a seek to an id, the consumer gets the messages after it (the C++ client's
    # consumers are start-exclusive; seen against Apache Pulsar 4.0.7)
    again = receive_n(c, 6, ack=True)
    assert [m.data() for m in again] == sent[4:]
    assert_nothing_more(c)
    c.seek(pulsar.MessageId.earliest)
    assert [m.data() for m in receive_n(c, 10, ack=True)] == sent
    assert_nothing_more(c)


def test_consumer_seek_by_timestamp(client, topic):
    p = client.create_producer(topic, batching_enabled=False)
    for x in _payloads("a", 5):
        p.send(x)
    time.sleep(0.3)
    ts = int(time.time() * 1000)
    time.sleep(0.3)
    for x in _payloads("b", 5):
        p.send(x)
    p.close()
    c = client.subscribe(topic, "seekt", initial_position=E)
    receive_n(c, 10, ack=True)
    c.seek(ts)
    assert [m.data() for m in receive_n(c, 5, ack=True)] == _payloads("b", 5)
    assert_nothing_more(c)
    c.seek(0)
    assert [m.data() for m in receive_n(c, 10, ack=True)] == _payloads("a", 5) + _payloads("b", 5)
    assert_nothing_more(c)


def test_reader_seek_by_message_id_and_timestamp(client, topic):
    p = client.create_producer(topic, batching_enabled=False)
    ids = [p.send(x) for x in _payloads("a", 5)]
    time.sleep(0.3)
    ts = int(time.time() * 1000)
    time.sleep(0.3)
    ids += [p.send(x) for x in _payloads("b", 5)]
    p.close()
    sent = _payloads("a", 5) + _payloads("b", 5)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert [m.data() for m in read_n(reader, 10)] == sent
    reader.seek(ts)
    assert [m.data() for m in read_n(reader, 5)] == sent[5:]
    _assert_reader_empty(reader)
    reader.seek(ids[2])
    got = [m.data() for m in drain_reader(reader, 1500)]
    # The reader was created exclusive (start_message_id_inclusive=False)
    assert got == sent[3:], got
    reader.seek(pulsar.MessageId.earliest)
    assert [m.data() for m in read_n(reader, 10)] == sent
    reader.close()


def test_get_last_message_id(client, topic):
    c = client.subscribe(topic, "last", initial_position=E)
    if not hasattr(c, "get_last_message_id"):
        pytest.skip("this pulsar-client has no Consumer.get_last_message_id")
    empty = c.get_last_message_id()
    assert (empty.ledger_id(), empty.entry_id()) == (-1, -1) or empty.entry_id() < 0
    ids = produce(client, topic, _payloads("l", 5))
    last = c.get_last_message_id()
    assert (last.ledger_id(), last.entry_id()) == (ids[-1].ledger_id(), ids[-1].entry_id())
    bids = produce(client, topic, _payloads("lb", 6), batching=True, batching_max_messages=6,
                   batching_max_publish_delay_ms=2000)
    last = c.get_last_message_id()
    assert (last.ledger_id(), last.entry_id()) == (bids[-1].ledger_id(), bids[-1].entry_id())
    assert last.batch_index() == bids[-1].batch_index()
