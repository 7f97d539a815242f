"""Producer access modes (Shared, Exclusive, WaitForExclusive, ExclusiveWithFencing),
with the Python client: Pulsar's error codes (ProducerBusy vs ProducerFenced) and the
WaitForExclusive queue."""
import threading
import time

import pulsar
import pytest

from compat_helpers import drain, new_client

Mode = pulsar.ProducerAccessMode


@pytest.fixture
def c2(quire):
    c = new_client(quire.service_url)
    yield c
    c.close()


def producer(client, topic, mode, **kw):
    return client.create_producer(topic, access_mode=mode, send_timeout_millis=10000, **kw)


def test_shared_producers_coexist(client, topic):
    a = producer(client, topic, Mode.Shared)
    b = producer(client, topic, Mode.Shared)
    a.send(b"a")
    b.send(b"b")


def test_exclusive_refuses_shared_with_producer_busy(client, topic):
    producer(client, topic, Mode.Exclusive)
    with pytest.raises(pulsar.ProducerBusy):
        producer(client, topic, Mode.Shared)


def test_exclusive_refuses_exclusive_with_producer_fenced(client, c2, topic):
    producer(client, topic, Mode.Exclusive)
    with pytest.raises(pulsar.ProducerFenced):
        producer(c2, topic, Mode.Exclusive)


def test_shared_producer_blocks_exclusive_with_producer_fenced(client, topic):
    producer(client, topic, Mode.Shared)
    with pytest.raises(pulsar.ProducerFenced):
        producer(client, topic, Mode.Exclusive)


def test_exclusive_after_previous_closed(client, topic):
    a = producer(client, topic, Mode.Exclusive)
    a.send(b"first")
    a.close()
    b = producer(client, topic, Mode.Exclusive)
    b.send(b"second")


def test_wait_for_exclusive_gets_the_topic_when_it_is_free(client, c2, topic):
    a = producer(client, topic, Mode.Exclusive)
    result = {}

    def create():
        try:
            result["p"] = producer(c2, topic, Mode.WaitForExclusive)
        except Exception as e:  # reported below
            result["e"] = e

    th = threading.Thread(target=create, daemon=True)
    th.start()
    time.sleep(1.5)
    assert th.is_alive(), f"WaitForExclusive did not wait: {result}"
    # while it waits, the topic still refuses a Shared producer (a waiter is exclusive)
    with pytest.raises(pulsar.ProducerBusy):
        producer(client, topic, Mode.Shared)
    a.send(b"from-a")
    a.close()
    th.join(10)
    assert not th.is_alive(), "WaitForExclusive producer not promoted after the owner left"
    assert "e" not in result, result
    result["p"].send(b"from-b")
    cons = client.subscribe(topic, "check", initial_position=pulsar.InitialPosition.Earliest)
    assert [m.data() for m in drain(cons, ack=True)] == [b"from-a", b"from-b"]


def test_exclusive_with_fencing_takes_over(client, c2, topic):
    a = producer(client, topic, Mode.Exclusive)
    a.send(b"from-a")
    b = producer(c2, topic, Mode.ExclusiveWithFencing)
    b.send(b"from-b")
    # the fenced producer cannot publish any more
    with pytest.raises((pulsar.ProducerFenced, pulsar.AlreadyClosed, pulsar.Timeout,
                        pulsar.ProducerBusy)):
        a.send(b"late")
    # and a plain Exclusive one is refused while b holds the topic
    with pytest.raises(pulsar.ProducerFenced):
        producer(client, topic, Mode.Exclusive)
    cons = client.subscribe(topic, "check", initial_position=pulsar.InitialPosition.Earliest)
    assert [m.data() for m in drain(cons, ack=True)] == [b"from-a", b"from-b"]


def test_exclusive_with_fencing_fails_waiting_producers(client, c2, topic):
    producer(client, topic, Mode.Exclusive)
    result = {}

    def create():
        try:
            result["p"] = producer(c2, topic, Mode.WaitForExclusive)
        except Exception as e:
            result["e"] = e

    th = threading.Thread(target=create, daemon=True)
    th.start()
    time.sleep(1.0)
    assert th.is_alive()
    f = producer(client, topic, Mode.ExclusiveWithFencing)
    th.join(10)
    assert not th.is_alive()
    assert isinstance(result.get("e"), pulsar.ProducerFenced), result
    f.send(b"ok")
