"""Topic compaction: REST trigger and status, the compacted view read_compacted readers
and consumers see (latest value per key, tombstones removed, original message ids,
then the messages after the horizon), table views, recompaction, restarts and the
automatic threshold (brokerServiceCompactionThresholdInBytes)."""
import time
import urllib.parse

import pulsar
import pytest

from compat_helpers import drain_reader, http, http_json, new_client, send_all_async
from conftest import EXTERNAL, QuireServer

COMPRESSION = {
    "none": pulsar.CompressionType.NONE,
    "lz4": pulsar.CompressionType.LZ4,
    "zlib": pulsar.CompressionType.ZLib,
    "zstd": pulsar.CompressionType.ZSTD,
    "snappy": pulsar.CompressionType.SNAPPY,
}


def admin_path(topic):
    rest = topic.split("://", 1)[1]
    return "persistent/" + "/".join(urllib.parse.quote(p, safe="") for p in rest.split("/"))


def compact(web_url, topic, timeout_s=30):
    url = f"{web_url}/admin/v2/{admin_path(topic)}/compaction"
    st, body = http("PUT", url)
    assert st == 204, (st, body)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        st, doc = http_json("GET", url)
        assert st == 200, (st, doc)
        if doc["status"] == "SUCCESS":
            return doc
        assert doc["status"] in ("RUNNING", "NOT_RUN"), doc
        time.sleep(0.1)
    raise AssertionError(f"compaction of {topic} did not finish: {doc}")


def mid(msg_id):
    return (msg_id.ledger_id(), msg_id.entry_id(), msg_id.batch_index())


def produce_keyed(client, topic, items, batching, compression=pulsar.CompressionType.NONE):
    """items: [(key or None, value bytes)]; returns the message ids in order."""
    p = client.create_producer(topic, batching_enabled=batching, compression_type=compression,
                               batching_max_messages=50, batching_max_publish_delay_ms=50,
                               block_if_queue_full=True)
    try:
        if batching:
            ids = [None] * len(items)
            # one send_async per message: keys differ inside a batch
            import threading
            done = threading.Event()
            left = [len(items)]
            lock = threading.Lock()

            def cb_for(i):
                def cb(res, msg_id):
                    assert res == pulsar.Result.Ok, res
                    with lock:
                        ids[i] = msg_id
                        left[0] -= 1
                        if left[0] == 0:
                            done.set()
                return cb
            for i, (k, v) in enumerate(items):
                kw = {"partition_key": k} if k is not None else {}
                p.send_async(v, cb_for(i), **kw)
            p.flush()
            assert done.wait(60)
            return ids
        out = []
        for k, v in items:
            kw = {"partition_key": k} if k is not None else {}
            out.append(p.send(v, **kw))
        return out
    finally:
        p.close()


def expected_view(items, ids):
    """The latest (key, value, id) per key, tombstones and keyless messages removed,
    in message id order: what a compacted reader must see."""
    latest = {}
    for (k, v), i in zip(items, ids):
        if k is None:
            continue
        if v == b"":
            latest.pop(k, None)
        else:
            latest[k] = (k, v, mid(i))
    return sorted(latest.values(), key=lambda t: t[2])


def read_all(client, topic, compacted, n_max=100000):
    r = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=compacted)
    try:
        return [(m.partition_key() or None, m.data(), mid(m.message_id()))
                for m in drain_reader(r, quiet_ms=1500, limit=n_max)]
    finally:
        r.close()


def workload(tag):
    items = [(f"k{i}", f"{tag}-k{i}-v1".encode()) for i in range(10)]
    items += [(None, b"no-key")]
    items += [(f"k{i}", f"{tag}-k{i}-v2".encode()) for i in range(5)]
    items += [("k5", b""), ("k6", b""), ("k7", f"{tag}-k7-v3".encode())]
    items += [("k6", f"{tag}-k6-back".encode()), ("k8", b"")]
    return items


@pytest.mark.parametrize("batching,codec", [(False, "none"), (True, "none"), (True, "lz4"),
                                            (True, "zlib"), (True, "zstd"), (True, "snappy"),
                                            (False, "zstd")])
def test_compacted_reader_sees_latest_per_key(quire, client, topic, batching, codec):
    items = workload(codec)
    ids = produce_keyed(client, topic, items, batching, COMPRESSION[codec])
    doc = compact(quire.web_url, topic)
    assert doc["lastError"] == ""
    after = [("k0", b"after-k0"), ("k11", b"after-k11")]
    after_ids = produce_keyed(client, topic, after, False)

    want = expected_view(items, ids) + [(k, v, mid(i)) for (k, v), i in zip(after, after_ids)]
    got = read_all(client, topic, compacted=True)
    assert got == want

    # a reader that does not ask for the compacted view sees everything
    plain = read_all(client, topic, compacted=False)
    assert [(k, v) for k, v, _ in plain] == [(k, v) for k, v in items + after]
    assert [i for _, _, i in plain] == [mid(i) for i in ids + after_ids]


def test_compacted_consumer_and_has_message_available(quire, client, topic):
    items = workload("c")
    ids = produce_keyed(client, topic, items, True, pulsar.CompressionType.LZ4)
    compact(quire.web_url, topic)
    want = expected_view(items, ids)

    # hasMessageAvailable ends at the compacted view's last message
    r = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
    got = []
    deadline = time.monotonic() + 20
    while r.has_message_available() and time.monotonic() < deadline:
        m = r.read_next(timeout_millis=5000)
        got.append((m.partition_key(), m.data(), mid(m.message_id())))
    r.close()
    assert got == want

    # a durable Exclusive consumer with read_compacted
    c = client.subscribe(topic, "compacted-sub", is_read_compacted=True,
                         initial_position=pulsar.InitialPosition.Earliest)
    seen = []
    while True:
        try:
            m = c.receive(timeout_millis=1500)
        except pulsar.Timeout:
            break
        seen.append((m.partition_key(), m.data(), mid(m.message_id())))
        c.acknowledge(m)
    c.close()
    assert seen == want


def latest_values(items):
    latest = {}
    for k, v in items:
        if k is None:
            continue
        if v == b"":
            latest.pop(k, None)
        else:
            latest[k] = v
    return latest


def test_table_view_reads_compacted(quire, client, topic):
    items = workload("tv")
    produce_keyed(client, topic, items, True, pulsar.CompressionType.ZSTD)
    compact(quire.web_url, topic)
    tv = client.create_table_view(topic)
    try:
        view = {}
        tv.for_each(lambda k, v: view.__setitem__(k, v))
        assert view == latest_values(items)
    finally:
        tv.close()


def test_recompaction_merges_previous_view(quire, client, topic):
    items1 = workload("one")
    ids1 = produce_keyed(client, topic, items1, True, pulsar.CompressionType.SNAPPY)
    compact(quire.web_url, topic)
    items2 = [("k1", b""), ("k2", b"two-k2"), ("k20", b"two-k20"), ("k6", b"")]
    ids2 = produce_keyed(client, topic, items2, True, pulsar.CompressionType.ZLib)
    compact(quire.web_url, topic)
    # compacting again with nothing new is a no-op success
    compact(quire.web_url, topic)
    want = expected_view(items1 + items2, ids1 + ids2)
    assert read_all(client, topic, compacted=True) == want
    st, stats = http_json("GET", f"{quire.web_url}/admin/v2/{admin_path(topic)}/internalStats")
    assert st == 200 and stats["compactedLedger"]["ledgerId"] >= 0, stats
    assert stats["compactedLedger"]["entries"] == len({i[:2] for _, _, i in want})


def test_compaction_rest_errors(quire, topic):
    url = f"{quire.web_url}/admin/v2/{admin_path(topic)}/compaction"
    st, _ = http("PUT", url)
    assert st == 404
    np = topic.replace("persistent://", "non-persistent://")
    st, _ = http("PUT", f"{quire.web_url}/admin/v2/non-persistent/"
                 + "/".join(np.split("://", 1)[1].split("/")) + "/compaction")
    assert st == 405
    st, _ = http("PUT", f"{quire.web_url}/admin/v2/{admin_path(topic)}", "{}")
    assert st in (200, 204)
    st, doc = http_json("GET", url)
    assert st == 200 and doc == {"status": "NOT_RUN", "lastError": ""}
    compact(quire.web_url, topic)  # an empty topic compacts to nothing


@pytest.mark.skipif(EXTERNAL, reason="restarts the server")
def test_compacted_view_survives_restart(fresh_quire):
    topic = "persistent://public/default/compaction-restart"
    c = new_client(fresh_quire.service_url)
    items = workload("rs")
    ids = produce_keyed(c, topic, items, True, pulsar.CompressionType.LZ4)
    compact(fresh_quire.web_url, topic)
    c.close()
    fresh_quire.restart()
    c = new_client(fresh_quire.service_url)
    try:
        more = [("k3", b"rs-k3-late")]
        more_ids = produce_keyed(c, topic, more, False)
        want = expected_view(items, ids) + [("k3", b"rs-k3-late", mid(more_ids[0]))]
        assert read_all(c, topic, compacted=True) == want
        compact(fresh_quire.web_url, topic)
        assert read_all(c, topic, compacted=True) == expected_view(items + more, ids + more_ids)
    finally:
        c.close()


@pytest.mark.skipif(EXTERNAL, reason="needs server flags")
def test_automatic_compaction_threshold():
    srv = QuireServer(extra_args=["--brokerServiceCompactionThresholdInBytes=100",
                                  "--brokerServiceCompactionMonitorIntervalInSeconds=1"]).start()
    try:
        topic = "persistent://public/default/auto-compaction"
        c = new_client(srv.service_url)
        items = workload("auto")
        ids = produce_keyed(c, topic, items, False)
        url = f"{srv.web_url}/admin/v2/{admin_path(topic)}/compaction"
        deadline = time.monotonic() + 20
        doc = None
        while time.monotonic() < deadline:
            st, doc = http_json("GET", url)
            if doc and doc.get("status") == "SUCCESS":
                break
            time.sleep(0.3)
        assert doc["status"] == "SUCCESS", doc
        assert read_all(c, topic, compacted=True) == expected_view(items, ids)
        c.close()
    finally:
        srv.cleanup()


# ---------------------------------------------------------------------------------------
# read_compacted subscription types, durable read_compacted consumers, large batches, and
# the namespace compactionThreshold policy.


@pytest.mark.parametrize("sub_type,wire_type", [(pulsar.ConsumerType.Shared, 1),
                                                (pulsar.ConsumerType.KeyShared, 3)])
def test_read_compacted_refused_on_shared(quire, client, topic, sub_type, wire_type):
    """Pulsar refuses read_compacted on Shared and Key_Shared subscriptions with
    NotAllowedError "readCompacted only allowed on failover or exclusive subscriptions".
    The C++/Python client refuses it itself (InvalidConfiguration) before asking, so the
    broker's answer is checked with a hand-built SUBSCRIBE."""
    from test_bad_input import ERROR, SUBSCRIBE, SUCCESS, Raw, base_command, f_bytes, \
        f_varint, simple_frame
    produce_keyed(client, topic, [("k", b"v")], False)
    with pytest.raises(pulsar.PulsarException):
        client.subscribe(topic, "shared-compacted", consumer_type=sub_type,
                         is_read_compacted=True)
    raw = Raw(quire.host_port)
    try:
        raw.connect()
        raw.lookup(topic)

        def subscribe(sub, subtype, consumer_id, request_id):
            body = (f_bytes(1, topic) + f_bytes(2, sub) + f_varint(3, subtype)
                    + f_varint(4, consumer_id) + f_varint(5, request_id) + f_varint(11, 1))
            raw.send(simple_frame(base_command(SUBSCRIBE, 4, body)))
            return raw.expect({ERROR, SUCCESS})

        ctype, err = subscribe("shared-compacted", wire_type, 1, 201)
        assert ctype == ERROR, err
        assert err[1] == [201] and err[2] == [22], err  # ServerError.NotAllowedError
        assert err[3] == [b"readCompacted only allowed on failover or exclusive subscriptions"]
        ctype, ok = subscribe("failover-compacted", 2, 2, 202)  # Failover: allowed
        assert ctype == SUCCESS, ok
    finally:
        raw.sock.close()
    # the same subscription without read_compacted works
    c = client.subscribe(topic, "shared-compacted", consumer_type=sub_type)
    c.close()


def consume_all(consumer, quiet_ms=1500):
    out = []
    while True:
        try:
            m = consumer.receive(timeout_millis=quiet_ms)
        except pulsar.Timeout:
            return out
        out.append((m.partition_key() or None, m.data(), mid(m.message_id())))
        consumer.acknowledge(m)


def sub_stats(web_url, topic, sub):
    st, doc = http_json("GET", f"{web_url}/admin/v2/{admin_path(topic)}/stats")
    assert st == 200, doc
    return doc["subscriptions"][sub]


def wait_backlog_zero(web_url, topic, sub, timeout_s=10):
    deadline = time.monotonic() + timeout_s
    while True:
        s = sub_stats(web_url, topic, sub)
        if s["msgBacklog"] == 0 or time.monotonic() > deadline:
            return s["msgBacklog"]
        time.sleep(0.2)


def test_durable_compacted_consumer_masked_batches_acked(quire, client, topic):
    """Compacted batches go out with their compacted-out messages masked; a consumer that
    acknowledges every message it got (batch index acks: the client names the messages) has
    acknowledged those entries wholly: nothing comes back after a reconnect, no backlog."""
    items = workload("dur")
    ids = produce_keyed(client, topic, items, True, pulsar.CompressionType.LZ4)
    compact(quire.web_url, topic)
    after = [("k1", b"dur-tail-1"), ("k30", b"dur-tail-2")]
    after_ids = produce_keyed(client, topic, after, False)
    want = expected_view(items, ids) + [(k, v, mid(i)) for (k, v), i in zip(after, after_ids)]

    kw = dict(is_read_compacted=True, initial_position=pulsar.InitialPosition.Earliest,
              batch_index_ack_enabled=True)
    c = client.subscribe(topic, "durable-compacted", **kw)
    assert consume_all(c) == want
    c.close()
    c = client.subscribe(topic, "durable-compacted", **kw)
    again = consume_all(c)
    c.close()
    assert again == []
    assert wait_backlog_zero(quire.web_url, topic, "durable-compacted") == 0
    # the progress is in the cursor: the same after the topic is unloaded and loaded again
    st, body = http("PUT", f"{quire.web_url}/admin/v2/{admin_path(topic)}/unload")
    assert st in (200, 204), (st, body)
    c = client.subscribe(topic, "durable-compacted", **kw)
    assert consume_all(c) == []
    c.close()
    assert sub_stats(quire.web_url, topic, "durable-compacted")["msgBacklog"] == 0


@pytest.mark.parametrize("n", [2000, 10000])
def test_large_compacted_batch_has_no_empty_messages(quire, client, topic, n):
    """One batch of n messages on 300 keys: compaction keeps each key's last message and
    masks the others; no compacted-out message may reach the application."""
    items = [(f"k{i % 300}", f"big-{i}".encode()) for i in range(n)]
    p = client.create_producer(topic, batching_enabled=True, batching_max_messages=n,
                               batching_max_allowed_size_in_bytes=4 << 20,
                               batching_max_publish_delay_ms=2000, block_if_queue_full=True,
                               max_pending_messages=n + 10)
    ids = [None] * n
    for i, (k, v) in enumerate(items):
        p.send_async(v, (lambda i: lambda res, msg_id: ids.__setitem__(i, msg_id))(i),
                     partition_key=k)
    p.flush()
    p.close()
    assert all(ids)
    assert len({(i.ledger_id(), i.entry_id()) for i in ids}) == 1, "not one batch"
    compact(quire.web_url, topic)
    want = expected_view(items, ids)
    got = read_all(client, topic, compacted=True)
    assert [v for _, v, _ in got if v == b""] == []
    assert got == want
    if n <= 8192:  # batch index acks of the cursor: at most 128 words
        kw = dict(is_read_compacted=True, initial_position=pulsar.InitialPosition.Earliest,
                  batch_index_ack_enabled=True)
        c = client.subscribe(topic, "big", **kw)
        assert consume_all(c) == want
        c.close()
        c = client.subscribe(topic, "big", **kw)
        assert consume_all(c) == []
        c.close()


@pytest.mark.skipif(EXTERNAL, reason="needs server flags")
def test_durable_compacted_consumer_over_trimmed_ledgers():
    """Ledgers of 5 entries: after compaction the consumed ledgers are trimmed and the
    compacted view is all that is left of them. A durable consumer from the earliest
    position gets it, acknowledges it and the tail; after a reconnect, and after a
    restart, it gets nothing again."""
    srv = QuireServer(extra_args=["--managedLedgerMaxEntriesPerLedger=5",
                                  "--managedLedgerMinLedgerRolloverTimeMinutes=0"]).start()
    try:
        topic = "persistent://public/default/compaction-trimmed"
        c = new_client(srv.service_url)
        # ledgers 1-4: 20 messages on 7 keys; ledger 5: k6 twice and k3's tombstone, so
        # the first entry left after the trim is one compaction removed
        items = [(f"k{i % 7}", f"t-{i}".encode()) for i in range(20)]
        items += [("k6", b"t-k6-a"), ("k6", b"t-k6-b"), ("k3", b"")]
        ids = produce_keyed(c, topic, items, False)
        compact(srv.web_url, topic)
        first = min(i.ledger_id() for i in ids)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            st, stats = http_json("GET", f"{srv.web_url}/admin/v2/{admin_path(topic)}/internalStats")
            if all(l["ledgerId"] != first for l in stats["ledgers"]):
                break
            time.sleep(0.3)
        else:
            raise AssertionError(f"ledgers not trimmed: {stats}")
        tail = [("k1", b"tail-1"), ("k9", b"tail-2"), ("k1", b"tail-3")]
        tail_ids = produce_keyed(c, topic, tail, False)
        want = expected_view(items, ids) + [(k, v, mid(i)) for (k, v), i in zip(tail, tail_ids)]
        kw = dict(is_read_compacted=True, initial_position=pulsar.InitialPosition.Earliest)
        cons = c.subscribe(topic, "trimmed", **kw)
        assert consume_all(cons) == want
        cons.close()
        cons = c.subscribe(topic, "trimmed", **kw)
        assert consume_all(cons) == []
        cons.close()
        assert wait_backlog_zero(srv.web_url, topic, "trimmed") == 0
        c.close()
        srv.restart()
        c = new_client(srv.service_url)
        cons = c.subscribe(topic, "trimmed", **kw)
        assert consume_all(cons) == []
        cons.close()
        c.close()
    finally:
        srv.cleanup()


def test_namespace_compaction_threshold_rest(quire):
    ns = f"public/ct-{int(time.time() * 1000) % 100000000}"
    base = f"{quire.web_url}/admin/v2/namespaces/{ns}"
    st, body = http("PUT", base, "{}")
    assert st in (200, 204), body
    url = f"{base}/compactionThreshold"
    st, body = http("GET", url)
    assert st == 204, (st, body)  # unset: null
    st, body = http("POST", url, "1048576")
    assert st == 204, (st, body)
    assert http_json("GET", url) == (200, 1048576)
    st, body = http("PUT", url, "0")
    assert st == 204, (st, body)
    assert http_json("GET", url) == (200, 0)
    st, doc = http_json("POST", url, "-1")
    assert st == 412 and doc["reason"] == "compactionThreshold must be 0 or more", (st, doc)
    st, doc = http_json("POST", url, '"ten"')
    assert st == 400, (st, doc)
    assert http_json("GET", url) == (200, 0)
    st, body = http("DELETE", url)
    assert st == 204, (st, body)
    st, body = http("GET", url)
    assert st == 204, (st, body)
    st, body = http("GET", f"{quire.web_url}/admin/v2/namespaces/public/nope-{ns[10:]}/compactionThreshold")
    assert st == 404, (st, body)


@pytest.mark.skipif(EXTERNAL, reason="needs server flags")
def test_namespace_compaction_threshold_triggers():
    """The namespace's threshold, set over REST, starts compaction (the broker's own is 0)."""
    srv = QuireServer(extra_args=["--brokerServiceCompactionMonitorIntervalInSeconds=1"]).start()
    try:
        st, body = http("PUT", f"{srv.web_url}/admin/v2/namespaces/public/auto-ct", "{}")
        assert st in (200, 204), body
        st, body = http("POST", f"{srv.web_url}/admin/v2/namespaces/public/auto-ct/"
                        "compactionThreshold", "100")
        assert st == 204, (st, body)
        topic = "persistent://public/auto-ct/auto"
        c = new_client(srv.service_url)
        items = workload("ns")
        ids = produce_keyed(c, topic, items, False)
        url = f"{srv.web_url}/admin/v2/{admin_path(topic)}/compaction"
        deadline = time.monotonic() + 20
        doc = None
        while time.monotonic() < deadline:
            st, doc = http_json("GET", url)
            if doc and doc.get("status") == "SUCCESS":
                break
            time.sleep(0.3)
        assert doc["status"] == "SUCCESS", doc
        assert read_all(c, topic, compacted=True) == expected_view(items, ids)
        c.close()
    finally:
        srv.cleanup()
