"""Produce and consume: plain, batched, compression, metadata round trip, receipts,
message size limit, chunking."""
import os
import time

import pulsar
import pytest

from compat_helpers import (assert_nothing_more, mid_key, produce, receive_n, send_all_async)

MAX_MESSAGE_SIZE = 5 * 1024 * 1024  # Pulsar's default maxMessageSize


def _sub(client, topic, name="sub", **kw):
    kw.setdefault("initial_position", pulsar.InitialPosition.Earliest)
    return client.subscribe(topic, name, **kw)


def test_plain_produce_consume_order_and_count(client, topic):
    consumer = _sub(client, topic)
    payloads = [f"plain-{i}".encode() for i in range(200)]
    produce(client, topic, payloads)
    msgs = receive_n(consumer, len(payloads), ack=True)
    assert [m.data() for m in msgs] == payloads
    # Non-batched messages: no batch index, every id distinct
    assert len({mid_key(m.message_id()) for m in msgs}) == len(payloads)
    assert_nothing_more(consumer)


def test_batched_produce_consume_order_and_count(client, topic):
    consumer = _sub(client, topic)
    payloads = [f"batched-{i}".encode() for i in range(2000)]
    ids = produce(client, topic, payloads, batching=True, batching_max_messages=100,
                  batching_max_publish_delay_ms=50)
    msgs = receive_n(consumer, len(payloads), ack=True)
    assert [m.data() for m in msgs] == payloads
    got_ids = [mid_key(m.message_id()) for m in msgs]
    assert len(set(got_ids)) == len(payloads)
    assert got_ids == sorted(got_ids), "message ids of consumed messages not increasing"
    # The client really batched: several messages share an entry, batch indexes > 0
    assert max(k[2] for k in got_ids) > 0
    assert len({k[:2] for k in got_ids}) < len(payloads)
    # The receipt ids are the consumed ids
    assert [mid_key(i) for i in ids] == got_ids
    assert_nothing_more(consumer)


@pytest.mark.parametrize("batching", [False, True], ids=["plain", "batched"])
@pytest.mark.parametrize("compression", ["LZ4", "ZLib", "ZSTD", "SNAPPY"])
def test_compression_round_trip(client, topic, compression, batching):
    ctype = getattr(pulsar.CompressionType, compression)
    consumer = _sub(client, topic)
    payloads = [(f"{compression}-{i}-".encode() + b"abcdefgh" * (50 + i % 7)) for i in range(300)]
    payloads.append(os.urandom(20000))  # incompressible too
    produce(client, topic, payloads, batching=batching, compression_type=ctype,
            batching_max_messages=50)
    msgs = receive_n(consumer, len(payloads), ack=True)
    assert [m.data() for m in msgs] == payloads
    assert_nothing_more(consumer)


def test_properties_keys_event_time_round_trip(client, topic):
    consumer = _sub(client, topic)
    producer = client.create_producer(topic, producer_name=f"named-{topic[-8:]}")
    before = int(time.time() * 1000)
    sent = []
    for i in range(20):
        props = {"index": str(i), "kind": "props", "unicode": "é✓"}
        kw = dict(properties=props, partition_key=f"key-{i % 3}", event_timestamp=1600000000000 + i)
        if i % 2:
            kw["ordering_key"] = f"ok-{i}"
        producer.send(f"payload-{i}".encode(), **kw)
        sent.append((f"payload-{i}".encode(), props, kw))
    after = int(time.time() * 1000)
    msgs = receive_n(consumer, len(sent), ack=True)
    for m, (data, props, kw) in zip(msgs, sent):
        assert m.data() == data
        assert m.properties() == props
        assert m.partition_key() == kw["partition_key"]
        assert m.event_timestamp() == kw["event_timestamp"]
        if "ordering_key" in kw:
            assert m.ordering_key() == kw["ordering_key"]
        assert before - 5000 <= m.publish_timestamp() <= after + 5000
        assert m.producer_name() == f"named-{topic[-8:]}"
        assert m.redelivery_count() == 0
        assert m.topic_name() == topic
    producer.close()


def test_generated_producer_name_and_producer_busy(client, topic):
    p1 = client.create_producer(topic)
    p2 = client.create_producer(topic)
    assert p1.producer_name() and p2.producer_name()
    assert p1.producer_name() != p2.producer_name()
    named = client.create_producer(topic, producer_name="only-one")
    with pytest.raises(pulsar.ProducerBusy):
        client.create_producer(topic, producer_name="only-one")
    named.close()
    # Once closed the name is free again
    again = client.create_producer(topic, producer_name="only-one")
    assert again.producer_name() == "only-one"
    for p in (p1, p2, again):
        p.close()


def test_receipts_strictly_increasing(client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    ids = [mid_key(producer.send(f"r-{i}".encode())) for i in range(100)]
    producer.close()
    assert all(a < b for a, b in zip(ids, ids[1:])), f"receipt ids not strictly increasing: {ids}"
    assert all(k[0] >= 0 and k[1] >= 0 for k in ids)
    # A new producer on the same topic continues after the last id
    producer = client.create_producer(topic, batching_enabled=False)
    later = mid_key(producer.send(b"later"))
    producer.close()
    assert later > ids[-1]


def test_async_receipts_in_order(client, topic):
    producer = client.create_producer(topic, batching_enabled=False, max_pending_messages=5000,
                                      block_if_queue_full=True)
    order = []
    ids = send_all_async(producer, [f"a-{i}".encode() for i in range(1000)])
    order = [mid_key(i) for i in ids]
    producer.close()
    assert all(a < b for a, b in zip(order, order[1:]))


def test_large_message_near_max_size_accepted(client, topic):
    consumer = _sub(client, topic, receiver_queue_size=5)
    payload = os.urandom(MAX_MESSAGE_SIZE - 16 * 1024)
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(payload)
    producer.send(b"after-large")
    producer.close()
    msgs = receive_n(consumer, 2, ack=True)
    assert msgs[0].data() == payload
    assert msgs[1].data() == b"after-large"


def test_over_max_size_refused(client, topic):
    producer = client.create_producer(topic, batching_enabled=False)
    with pytest.raises(pulsar.PulsarException) as exc:
        producer.send(os.urandom(MAX_MESSAGE_SIZE + 1024))
    assert isinstance(exc.value, pulsar.MessageTooBig) or "TooBig" in repr(exc.value) \
        or "size" in str(exc.value).lower(), f"unexpected error {exc.value!r}"
    # The producer still works afterwards, and the refused message was not stored
    producer.send(b"small")
    producer.close()
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    assert reader.read_next(timeout_millis=10000).data() == b"small"
    with pytest.raises(pulsar.Timeout):
        reader.read_next(timeout_millis=1000)
    reader.close()


def test_chunked_messages_reassembled(client, topic):
    consumer = _sub(client, topic, max_pending_chunked_message=10)
    producer = client.create_producer(topic, batching_enabled=False, chunking_enabled=True)
    big1 = os.urandom(MAX_MESSAGE_SIZE * 2 + 12345)   # 3 chunks
    big2 = os.urandom(MAX_MESSAGE_SIZE + 1)           # 2 chunks
    sent = [b"before", big1, b"middle", big2, b"after"]
    ids = [producer.send(x, properties={"n": str(i)}) for i, x in enumerate(sent)]
    producer.close()
    msgs = receive_n(consumer, len(sent), timeout_ms=30000, ack=True)
    assert [len(m.data()) for m in msgs] == [len(x) for x in sent]
    assert [m.data() for m in msgs] == sent
    assert [m.properties()["n"] for m in msgs] == [str(i) for i in range(len(sent))]
    assert_nothing_more(consumer)
    # A reader reassembles them too
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got = [reader.read_next(timeout_millis=30000).data() for _ in sent]
    reader.close()
    assert got == sent
    assert len(ids) == len(sent)
