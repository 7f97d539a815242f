"""Shared helpers for the compat tests (bounded receive loops, REST calls, ids)."""
import json
import threading
import time
import urllib.error
import urllib.request
import uuid

import pulsar

RECEIVE_MS = 10000  # one receive() may wait this long for a message that must come
QUIET_MS = 1000     # how long "nothing more arrives" is observed


def new_client(service_url, **kw):
    kw.setdefault("operation_timeout_seconds", 15)
    kw.setdefault("connection_timeout_ms", 5000)
    return pulsar.Client(service_url, **kw)


def mid_key(msg_id):
    """(ledger, entry, batch_index) of a message id, for ordering checks."""
    return (msg_id.ledger_id(), msg_id.entry_id(), msg_id.batch_index())


def receive_n(consumer, n, timeout_ms=RECEIVE_MS, ack=False):
    """Receive exactly n messages (each receive bounded by timeout_ms)."""
    out = []
    for i in range(n):
        try:
            m = consumer.receive(timeout_millis=timeout_ms)
        except pulsar.Timeout:
            raise AssertionError(f"timed out after receiving {i} of {n} messages: "
                                 f"{[x.data()[:40] for x in out[-5:]]}")
        out.append(m)
        if ack:
            consumer.acknowledge(m)
    return out


def read_n(reader, n, timeout_ms=RECEIVE_MS):
    out = []
    for i in range(n):
        try:
            out.append(reader.read_next(timeout_millis=timeout_ms))
        except pulsar.Timeout:
            raise AssertionError(f"reader timed out after {i} of {n} messages")
    return out


def drain(consumer, quiet_ms=QUIET_MS, limit=100000, ack=False):
    """Receive until nothing arrives for quiet_ms (at most `limit` messages)."""
    out = []
    while len(out) < limit:
        try:
            m = consumer.receive(timeout_millis=quiet_ms)
        except pulsar.Timeout:
            break
        out.append(m)
        if ack:
            consumer.acknowledge(m)
    return out


def drain_reader(reader, quiet_ms=QUIET_MS, limit=100000):
    out = []
    while len(out) < limit:
        try:
            out.append(reader.read_next(timeout_millis=quiet_ms))
        except pulsar.Timeout:
            break
    return out


def assert_nothing_more(consumer, quiet_ms=QUIET_MS):
    try:
        m = consumer.receive(timeout_millis=quiet_ms)
    except pulsar.Timeout:
        return
    raise AssertionError(f"unexpected extra message {m.data()[:60]!r} id={m.message_id()} "
                         f"redelivery_count={m.redelivery_count()}")


def send_all_async(producer, payloads, timeout_s=60, **kw):
    """send_async every payload, flush, wait for every receipt (bounded). Returns ids in order."""
    n = len(payloads)
    ids = [None] * n
    errors = []
    done = threading.Event()
    lock = threading.Lock()
    count = [0]

    def cb_for(i):
        def cb(res, msg_id):
            with lock:
                if res != pulsar.Result.Ok:
                    errors.append((i, res))
                ids[i] = msg_id
                count[0] += 1
                if count[0] == n:
                    done.set()
        return cb

    for i, p in enumerate(payloads):
        producer.send_async(p, cb_for(i), **kw)
    producer.flush()
    assert done.wait(timeout_s), f"only {count[0]} of {n} send receipts within {timeout_s}s"
    assert not errors, f"send errors: {errors[:5]}"
    return ids


def produce(client, topic, payloads, batching=False, **producer_kw):
    producer_kw.setdefault("block_if_queue_full", True)
    producer_kw.setdefault("max_pending_messages", 10000)
    p = client.create_producer(topic, batching_enabled=batching, **producer_kw)
    try:
        if batching:
            return send_all_async(p, payloads)
        return [p.send(x) for x in payloads]
    finally:
        p.close()


def http(method, url, body=None, content_type="application/json", timeout=15):
    """Returns (status, body bytes); HTTP errors are returned, not raised."""
    data = None
    if body is not None:
        data = body if isinstance(body, bytes) else str(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


def http_json(method, url, body=None, timeout=15):
    status, data = http(method, url, body, timeout=timeout)
    try:
        return status, json.loads(data) if data else None
    except ValueError:
        return status, data


def unique(prefix):
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def short_name(topic):
    return topic.rsplit("/", 1)[1]


def murmur3_32(data: bytes, seed=0):
    """Murmur3 x86_32, as Pulsar's Murmur3_32Hash (Key_Shared sticky key hash)."""
    c1, c2 = 0xcc9e2d51, 0x1b873593
    h = seed
    n = len(data)
    nblocks = n // 4
    for i in range(nblocks):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * c1) & 0xffffffff
        k = ((k << 15) | (k >> 17)) & 0xffffffff
        k = (k * c2) & 0xffffffff
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xffffffff
        h = (h * 5 + 0xe6546b64) & 0xffffffff
    tail = data[4 * nblocks:]
    k = 0
    if len(tail) >= 3:
        k ^= tail[2] << 16
    if len(tail) >= 2:
        k ^= tail[1] << 8
    if len(tail) >= 1:
        k ^= tail[0]
        k = (k * c1) & 0xffffffff
        k = ((k << 15) | (k >> 17)) & 0xffffffff
        k = (k * c2) & 0xffffffff
        h ^= k
    h ^= n
    h ^= h >> 16
    h = (h * 0x85ebca6b) & 0xffffffff
    h ^= h >> 13
    h = (h * 0xc2b2ae35) & 0xffffffff
    h ^= h >> 16
    return h


def key_shared_slot(key: str):
    """The Key_Shared hash slot (0..65535) of a sticky key, as the Java broker computes it."""
    return (murmur3_32(key.encode()) & 0x7fffffff) % 65536
