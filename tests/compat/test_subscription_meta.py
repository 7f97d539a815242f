"""SUBSCRIBE's subscription_properties and replicate_subscription_state (shown in topic
stats, persisted with a durable subscription), and non-durable subscriptions
(durable=false). The Python client sends neither field, so these use a raw connection."""
import time
import uuid

import pulsar
import pytest

from compat_helpers import http_json, new_client
from test_bad_input import (CONNECT, CONNECTED, FLOW, MESSAGE, SUBSCRIBE, SUCCESS, Raw,
                            base_command, f_bytes, f_varint, simple_frame)


def kv(key, value):
    return f_bytes(1, key) + f_bytes(2, value)


def raw_subscribe(srv, topic, sub, consumer_id=1, durable=True, props=None, replicated=False,
                  earliest=True):
    raw = Raw(srv.host_port)
    raw.send(simple_frame(base_command(CONNECT, 2, f_bytes(1, "Pulsar-CPP-v3.5.0")
                                       + f_varint(4, 20))))
    raw.expect({CONNECTED})
    body = (f_bytes(1, topic) + f_bytes(2, sub) + f_varint(3, 0) + f_varint(4, consumer_id)
            + f_varint(5, 1))
    if not durable:
        body += f_varint(8, 0)
        if earliest:  # start_message_id = (-1, -1)
            body += f_bytes(9, f_varint(1, -1) + f_varint(2, -1))
    elif earliest:
        body += f_varint(13, 1)
    if replicated:
        body += f_varint(14, 1)
    for k, v in (props or {}).items():
        body += f_bytes(18, kv(k, v))
    raw.send(simple_frame(base_command(SUBSCRIBE, 4, body)))
    raw.expect({SUCCESS})
    return raw


def stats(srv, topic):
    status, st = http_json("GET", f"{srv.web_url}/admin/v2/persistent/"
                                  f"{topic.split('://', 1)[1]}/stats")
    assert status == 200, (status, st)
    return st


def wait_sub_gone(srv, topic, sub, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if sub not in stats(srv, topic)["subscriptions"]:
            return
        time.sleep(0.1)
    raise AssertionError(f"subscription {sub} still listed")


def test_subscription_properties_in_stats(quire, topic):
    raw = raw_subscribe(quire, topic, "props", props={"team": "a", "tier": "gold"},
                        replicated=True)
    try:
        s = stats(quire, topic)["subscriptions"]["props"]
        assert s["subscriptionProperties"] == {"team": "a", "tier": "gold"}
        assert s["isReplicated"] is True
        assert s["isDurable"] is True
    finally:
        raw.close()
    # a later SUBSCRIBE to the existing subscription does not change them (as Pulsar)
    time.sleep(0.3)
    raw = raw_subscribe(quire, topic, "props", consumer_id=2, props={"team": "b"})
    try:
        s = stats(quire, topic)["subscriptions"]["props"]
        assert s["subscriptionProperties"] == {"team": "a", "tier": "gold"}
    finally:
        raw.close()


def test_subscription_without_properties(quire, client, topic):
    c = client.subscribe(topic, "plain")
    s = stats(quire, topic)["subscriptions"]["plain"]
    assert s["subscriptionProperties"] == {}
    assert s["isReplicated"] is False
    c.close()


@pytest.mark.needs_restart
def test_subscription_properties_survive_restart(fresh_quire):
    srv = fresh_quire
    topic = f"persistent://public/default/props-restart-{uuid.uuid4().hex[:8]}"
    raw = raw_subscribe(srv, topic, "kept", props={"owner": "billing"})
    raw.close()
    time.sleep(0.3)
    srv.restart()
    s = stats(srv, topic)["subscriptions"]["kept"]
    assert s["subscriptionProperties"] == {"owner": "billing"}
    # unsubscribing removes them with the subscription
    client = new_client(srv.service_url)
    try:
        c = client.subscribe(topic, "kept")
        c.unsubscribe()
        c2 = client.subscribe(topic, "kept")
        assert stats(srv, topic)["subscriptions"]["kept"]["subscriptionProperties"] == {}
        c2.close()
    finally:
        client.close()


def test_non_durable_subscription(quire, client, topic):
    p = client.create_producer(topic)
    p.send(b"before")
    raw = raw_subscribe(quire, topic, "nd", durable=False, props={"k": "v"})
    try:
        s = stats(quire, topic)["subscriptions"]["nd"]
        assert s["isDurable"] is False
        assert s["subscriptionProperties"] == {"k": "v"}
        for i in range(3):
            p.send(f"after-{i}".encode())
        raw.send(simple_frame(base_command(FLOW, 11, f_varint(1, 1) + f_varint(2, 100))))
        for _ in range(4):  # from earliest: "before" and the three after
            raw.expect({MESSAGE})
    finally:
        raw.close()
    # a non-durable subscription goes with its last consumer, and keeps no cursor
    wait_sub_gone(quire, topic, "nd")
    durable = client.subscribe(topic, "d", initial_position=pulsar.InitialPosition.Earliest)
    assert "nd" not in stats(quire, topic)["subscriptions"]
    durable.close()
