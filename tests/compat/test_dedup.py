"""Message deduplication (namespace policy deduplicationEnabled), with the Python client.

Pulsar's semantics: keyed by producer name + sequence id; a SEND whose sequence id is
not above the highest persisted one for its producer name is acknowledged without being
stored; PRODUCER_SUCCESS.last_sequence_id tells a reconnecting producer where to go on.
"""
import json
import time
import uuid

import pulsar
import pytest

from compat_helpers import drain_reader, http, http_json, new_client, short_name

N = 200


def set_dedup(srv, ns, enabled):
    status, body = http("POST", f"{srv.web_url}/admin/v2/namespaces/{ns}/deduplication",
                        json.dumps(enabled))
    assert status in (200, 204), (status, body)


def create_namespace(srv):
    ns = f"public/dedup-{uuid.uuid4().hex[:8]}"
    status, body = http("PUT", f"{srv.web_url}/admin/v2/namespaces/{ns}", "{}")
    assert status in (200, 204), (status, body)
    return ns


def wait_dedup_status(srv, topic, wanted, timeout=10):
    """Polls the topic stats until deduplicationStatus is `wanted` (policies apply async)."""
    url = f"{srv.web_url}/admin/v2/persistent/{topic.split('://', 1)[1]}/stats"
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        status, st = http_json("GET", url)
        last = (status, st and st.get("deduplicationStatus") if isinstance(st, dict) else st)
        if status == 200 and st.get("deduplicationStatus") == wanted:
            return
        time.sleep(0.1)
    raise AssertionError(f"deduplicationStatus never became {wanted}: {last}")


def read_all(client, topic):
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    try:
        return [m.data() for m in drain_reader(reader, quiet_ms=1500)]
    finally:
        reader.close()


def payload(i):
    return f"msg-{i:05d}".encode()


def seq(i):
    """Sequence id of message i: the Python client ignores an explicit sequence_id of 0."""
    return i + 1


def test_duplicates_are_acknowledged_not_stored(quire):
    ns = create_namespace(quire)
    set_dedup(quire, ns, True)
    topic = f"persistent://{ns}/dup-{uuid.uuid4().hex[:8]}"
    client = new_client(quire.service_url)
    try:
        p = client.create_producer(topic, producer_name="dedup-same-conn")
        wait_dedup_status(quire, topic, "Enabled")
        for i in range(10):
            p.send(payload(i), sequence_id=seq(i))
        for i in (3, 7, 9):  # already persisted: acknowledged, not stored
            p.send(payload(i), sequence_id=seq(i))
        p.send(payload(10), sequence_id=seq(10))
        assert read_all(client, topic) == [payload(i) for i in range(11)]
        p.close()
        p2 = client.create_producer(topic, producer_name="dedup-same-conn")
        assert p2.last_sequence_id() == seq(10)
        p2.send(b"next")  # sequence ids continue after last_sequence_id: stored
        assert read_all(client, topic)[-1] == b"next"
        assert p2.last_sequence_id() == seq(11)
    finally:
        client.close()


def test_disabling_stops_checking(quire):
    ns = create_namespace(quire)
    set_dedup(quire, ns, True)
    topic = f"persistent://{ns}/off-{uuid.uuid4().hex[:8]}"
    client = new_client(quire.service_url)
    try:
        p = client.create_producer(topic, producer_name="dedup-toggle")
        wait_dedup_status(quire, topic, "Enabled")
        p.send(payload(0), sequence_id=seq(0))
        p.send(payload(0), sequence_id=seq(0))
        assert read_all(client, topic) == [payload(0)]
        set_dedup(quire, ns, False)
        wait_dedup_status(quire, topic, "Disabled")
        p.send(payload(0), sequence_id=seq(0))
        assert read_all(client, topic) == [payload(0), payload(0)]
    finally:
        client.close()


@pytest.mark.needs_restart
def test_exactly_once_across_kill9(fresh_quire):
    srv = fresh_quire
    set_dedup(srv, "public/default", True)
    topic = f"persistent://public/default/dedup-crash-{uuid.uuid4().hex[:8]}"
    name = "dedup-crash-producer"
    client = new_client(srv.service_url)
    p = client.create_producer(topic, producer_name=name, block_if_queue_full=True,
                               batching_enabled=False, send_timeout_millis=0)
    wait_dedup_status(srv, topic, "Enabled")
    acked = N // 2
    for i in range(acked):
        p.send(payload(i), sequence_id=seq(i))
    for i in range(acked, N):  # in flight when the server dies
        p.send_async(payload(i), lambda res, mid: None, sequence_id=seq(i))
    srv.kill9()
    try:
        client.close()
    except Exception:
        pass
    srv.start()

    client = new_client(srv.service_url)
    try:
        p = client.create_producer(topic, producer_name=name)
        last = p.last_sequence_id()
        assert seq(acked - 1) <= last <= seq(N - 1), last
        for i in range(N):  # the application resends everything from the start
            p.send(payload(i), sequence_id=seq(i))
        assert p.last_sequence_id() == seq(N - 1)
        got = read_all(client, topic)
        assert len(got) == N, (len(got), got[:3], got[-3:])
        assert got == [payload(i) for i in range(N)]
        p.close()
        p = client.create_producer(topic, producer_name=name)
        assert p.last_sequence_id() == seq(N - 1)
        p.send(b"after")
        assert read_all(client, topic)[-1] == b"after"
    finally:
        client.close()


@pytest.mark.needs_restart
def test_state_survives_clean_restart(fresh_quire):
    srv = fresh_quire
    ns = create_namespace(srv)
    set_dedup(srv, ns, True)
    topic = f"persistent://{ns}/dedup-restart-{uuid.uuid4().hex[:8]}"
    client = new_client(srv.service_url)
    try:
        p = client.create_producer(topic, producer_name="dedup-restart")
        wait_dedup_status(srv, topic, "Enabled")
        for i in range(20):
            p.send(payload(i), sequence_id=seq(i))
    finally:
        client.close()
    srv.restart()
    client = new_client(srv.service_url)
    try:
        p = client.create_producer(topic, producer_name="dedup-restart")
        assert p.last_sequence_id() == seq(19)
        for i in range(25):
            p.send(payload(i), sequence_id=seq(i))
        assert read_all(client, topic) == [payload(i) for i in range(25)]
    finally:
        client.close()
    assert short_name(topic)
