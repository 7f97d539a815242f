"""Topic termination: POST .../terminate, TopicTerminated for producers, consumers read
everything; REACHED_END_OF_TOPIC only for Java clients (checked with a raw connection
that announces itself as a Java client)."""
import uuid

import pulsar
import pytest

from compat_helpers import drain, http_json, new_client, receive_n
from test_bad_input import (CONNECT, CONNECTED, FLOW, MESSAGE, SUBSCRIBE, SUCCESS, Raw,
                            base_command, f_bytes, f_varint, simple_frame)

REACHED_END_OF_TOPIC = 27


def terminate(srv, topic):
    return http_json("POST", f"{srv.web_url}/admin/v2/persistent/{topic.split('://', 1)[1]}"
                             "/terminate")


def produce_n(client, topic, n):
    p = client.create_producer(topic)
    ids = [p.send(f"m-{i}".encode()) for i in range(n)]
    return p, ids


def test_terminate_returns_last_message_id_and_refuses_producers(quire, client, topic):
    p, ids = produce_n(client, topic, 5)
    status, body = terminate(quire, topic)
    assert status == 200, (status, body)
    assert body["ledgerId"] == ids[-1].ledger_id()
    assert body["entryId"] == ids[-1].entry_id()
    assert body["partitionIndex"] == -1
    # the connected producer is disconnected; its sends now fail
    with pytest.raises(pulsar.TopicTerminated):
        p.send(b"late")
    with pytest.raises(pulsar.TopicTerminated):
        client.create_producer(topic)
    # terminating again answers the same id
    status, again = terminate(quire, topic)
    assert status == 200 and again == body


def test_consumer_reads_everything_then_nothing_and_stays_connected(quire, client, topic):
    cons = client.subscribe(topic, "sub", initial_position=pulsar.InitialPosition.Earliest)
    produce_n(client, topic, 10)
    assert terminate(quire, topic)[0] == 200
    got = receive_n(cons, 10, ack=True)
    assert [m.data() for m in got] == [f"m-{i}".encode() for i in range(10)]
    with pytest.raises(pulsar.Timeout):
        cons.receive(timeout_millis=1500)
    # still connected and usable (a C++ client would drop the connection on
    # REACHED_END_OF_TOPIC, so it must not have been sent one)
    assert cons.is_connected()
    late = client.subscribe(topic, "late", initial_position=pulsar.InitialPosition.Earliest)
    assert len(drain(late)) == 10


def test_terminate_missing_topic_is_404(quire):
    status, _ = terminate(quire, f"persistent://public/default/none-{uuid.uuid4().hex[:8]}")
    assert status == 404


def test_java_consumer_gets_reached_end_of_topic(quire, client, topic):
    produce_n(client, topic, 3)
    assert terminate(quire, topic)[0] == 200
    raw = Raw(quire.host_port)
    try:
        raw.send(simple_frame(base_command(CONNECT, 2, f_bytes(1, "3.3.0") + f_varint(4, 20))))
        raw.expect({CONNECTED})
        sub = (f_bytes(1, topic) + f_bytes(2, "java-like") + f_varint(3, 0) + f_varint(4, 1)
               + f_varint(5, 1) + f_varint(13, 1))  # Exclusive, Earliest
        raw.send(simple_frame(base_command(SUBSCRIBE, 4, sub)))
        raw.expect({SUCCESS})
        raw.send(simple_frame(base_command(FLOW, 11, f_varint(1, 1) + f_varint(2, 100))))
        for _ in range(3):
            raw.expect({MESSAGE})
        ctype, body = raw.expect({REACHED_END_OF_TOPIC})
        assert body[1] == [1]  # consumer_id
    finally:
        raw.close()


@pytest.mark.needs_restart
def test_termination_survives_restart(fresh_quire):
    srv = fresh_quire
    topic = f"persistent://public/default/term-restart-{uuid.uuid4().hex[:8]}"
    client = new_client(srv.service_url)
    try:
        produce_n(client, topic, 4)
        status, body = terminate(srv, topic)
        assert status == 200
    finally:
        client.close()
    srv.restart(kill=True)
    client = new_client(srv.service_url)
    try:
        with pytest.raises(pulsar.TopicTerminated):
            client.create_producer(topic)
        assert terminate(srv, topic) == (200, body)
    finally:
        client.close()
