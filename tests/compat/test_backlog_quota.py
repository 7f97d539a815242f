"""Backlog quotas: destination_storage (bytes) and message_age (seconds) with the three
policies, observed through the Python client; stats and metrics fields.

The module's server checks quotas every second (--backlogQuotaCheckIntervalInSeconds=1;
Pulsar's default is 60). Each test uses a namespace of its own."""
import threading
import time
import uuid

import pulsar
import pytest

from compat_helpers import drain, http, http_json, new_client, receive_n
from conftest import EXTERNAL, QuireServer

E = pulsar.InitialPosition.Earliest
PAYLOAD = b"q" * 1000

pytestmark = pytest.mark.skipif(EXTERNAL, reason="needs --backlogQuotaCheckIntervalInSeconds=1")


@pytest.fixture(scope="module")
def srv():
    s = QuireServer(extra_args=["--backlogQuotaCheckIntervalInSeconds=1"]).start()
    yield s
    s.cleanup()


@pytest.fixture
def cl(srv):
    c = new_client(srv.service_url)
    yield c
    c.close()


def namespace_with_quota(srv, quota_type, limit_size=-1, limit_time=-1, policy="producer_exception"):
    ns = f"public/bq-{uuid.uuid4().hex[:8]}"
    st, body = http("PUT", f"{srv.web_url}/admin/v2/namespaces/{ns}", "{}")
    assert st in (200, 204), body
    body = f'{{"limitSize": {limit_size}, "limitTime": {limit_time}, "policy": "{policy}"}}'
    st, resp = http("POST", f"{srv.web_url}/admin/v2/namespaces/{ns}/backlogQuota"
                            f"?backlogQuotaType={quota_type}", body)
    assert st in (200, 204), resp
    time.sleep(0.3)  # the broker's policies cache follows a metadata watch
    return ns


def stats(srv, topic):
    path = topic.split("://", 1)[1]
    st, body = http_json("GET", f"{srv.web_url}/admin/v2/persistent/{path}/stats")
    assert st == 200, body
    return body


def wait_for(pred, timeout=10.0, step=0.2):
    deadline = time.monotonic() + timeout
    while True:
        v = pred()
        if v or time.monotonic() > deadline:
            return v
        time.sleep(step)


def fill(cl, topic, n, sub="slow"):
    """A durable subscription without consumers, then n messages of 1000 bytes."""
    cl.subscribe(topic, sub, initial_position=E).close()
    p = cl.create_producer(topic, batching_enabled=False, send_timeout_millis=5000)
    for i in range(n):
        try:
            p.send(b"%04d" % i + PAYLOAD)
        except pulsar.PulsarException:
            break  # disconnected by the quota check on publish: expected once over
    try:
        p.close()
    except pulsar.PulsarException:
        pass


def create_producer_error(cl, topic):
    try:
        p = cl.create_producer(topic, batching_enabled=False)
    except Exception as e:  # noqa: BLE001 - the class is what is checked
        return e
    p.close()
    return None


def ack_all(cl, topic, sub="slow"):
    c = cl.subscribe(topic, sub, initial_position=E)
    got = drain(c, quiet_ms=1000)
    if got:
        c.acknowledge_cumulative(got[-1])
    c.close()
    return got


# ------------------------------------------------------ destination_storage --

def test_size_quota_producer_exception(srv, cl):
    ns = namespace_with_quota(srv, "destination_storage", limit_size=10_000)
    topic = f"persistent://{ns}/exc"
    fill(cl, topic, 20)
    e = wait_for(lambda: create_producer_error(cl, topic), timeout=5)
    assert isinstance(e, pulsar.ProducerBlockedQuotaExceededException), repr(e)
    st = stats(srv, topic)
    assert st["backlogQuotaLimitSize"] == 10_000
    assert st["backlogSize"] >= 10_000
    # consuming the backlog lifts the block
    ack_all(cl, topic)
    assert wait_for(lambda: create_producer_error(cl, topic) is None, timeout=5)


def test_size_quota_producer_request_hold(srv, cl):
    ns = namespace_with_quota(srv, "destination_storage", limit_size=10_000,
                              policy="producer_request_hold")
    topic = f"persistent://{ns}/hold"
    cl.subscribe(topic, "slow", initial_position=E).close()
    p = cl.create_producer(topic, batching_enabled=False, send_timeout_millis=0)
    for i in range(20):
        p.send(b"%04d" % i + PAYLOAD)
    # a new producer is refused with the retriable error
    e = wait_for(lambda: create_producer_error(cl, topic), timeout=5)
    assert isinstance(e, pulsar.ProducerBlockedQuotaExceededError), repr(e)
    # the existing producer was disconnected: its next send is held, not failed
    time.sleep(1.5)
    done = threading.Event()
    result = []

    def cb(res, mid):
        result.append(res)
        done.set()

    p.send_async(b"held" + PAYLOAD, cb)
    assert not done.wait(2.5), f"send completed while the quota is exceeded: {result}"
    ack_all(cl, topic)
    assert done.wait(30), "the held send never completed after the backlog dropped"
    assert result == [pulsar.Result.Ok]
    p.close()


def test_size_quota_consumer_backlog_eviction(srv, cl):
    ns = namespace_with_quota(srv, "destination_storage", limit_size=10_000,
                              policy="consumer_backlog_eviction")
    topic = f"persistent://{ns}/evict"
    fill(cl, topic, 30)
    # producers are never blocked by eviction
    assert create_producer_error(cl, topic) is None
    assert wait_for(lambda: stats(srv, topic)["backlogSize"] < 10_000, timeout=5), stats(srv, topic)
    c = cl.subscribe(topic, "slow", initial_position=E)
    got = drain(c, quiet_ms=1000, ack=True)
    ids = [int(m.data()[:4]) for m in got]
    assert ids and ids[-1] == 29, ids
    assert ids[0] > 0 and len(ids) <= 10, ids  # the slow subscription skipped its oldest
    assert ids == list(range(ids[0], 30))


# -------------------------------------------------------------- message_age --

def test_age_quota_producer_exception(srv, cl):
    ns = namespace_with_quota(srv, "message_age", limit_time=2)
    topic = f"persistent://{ns}/age-exc"
    fill(cl, topic, 3)
    assert create_producer_error(cl, topic) is None  # young backlog: allowed
    e = wait_for(lambda: create_producer_error(cl, topic), timeout=8)
    assert isinstance(e, pulsar.ProducerBlockedQuotaExceededException), repr(e)
    st = stats(srv, topic)
    assert st["backlogQuotaLimitTime"] == 2
    assert st["oldestBacklogMessageAgeSeconds"] >= 2
    ack_all(cl, topic)
    assert wait_for(lambda: create_producer_error(cl, topic) is None, timeout=5)


def test_age_quota_consumer_backlog_eviction(srv, cl):
    ns = namespace_with_quota(srv, "message_age", limit_time=2,
                              policy="consumer_backlog_eviction")
    topic = f"persistent://{ns}/age-evict"
    fill(cl, topic, 5)
    assert wait_for(lambda: stats(srv, topic)["subscriptions"]["slow"]["msgBacklog"] == 0,
                    timeout=8), stats(srv, topic)
    p = cl.create_producer(topic, batching_enabled=False)
    for i in range(3):
        p.send(b"new-%d" % i)
    c = cl.subscribe(topic, "slow", initial_position=E)
    got = receive_n(c, 3, ack=True)
    assert [m.data() for m in got] == [b"new-%d" % i for i in range(3)]


# ---------------------------------------------------------- stats / metrics --

def test_quota_in_stats_and_metrics(srv, cl):
    ns = namespace_with_quota(srv, "destination_storage", limit_size=123_456,
                              policy="consumer_backlog_eviction")
    topic = f"persistent://{ns}/visible"
    fill(cl, topic, 3)
    st = stats(srv, topic)
    assert st["backlogQuotaLimitSize"] == 123_456
    assert st["backlogQuotaLimitTime"] == -1
    assert 3000 <= st["backlogSize"] < 123_456
    status, body = http("GET", f"{srv.web_url}/metrics")
    assert status == 200
    text = body.decode()
    lines = [ln for ln in text.splitlines() if topic in ln]
    assert any(ln.startswith("pulsar_storage_backlog_quota_limit{") and ln.endswith(" 123456")
               for ln in lines), lines
    assert any(ln.startswith("pulsar_storage_backlog_size{") for ln in lines), lines
    assert any(ln.startswith("pulsar_storage_backlog_quota_limit_time{") for ln in lines)
