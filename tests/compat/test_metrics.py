"""GET /metrics read by Prometheus' own text-format parser (prometheus_client):
the exposition parses, and the values Pulsar's dashboards use are the real
counts of traffic the test made."""
import time
import urllib.request
import uuid

import pytest

from compat_helpers import new_client

parser = pytest.importorskip("prometheus_client.parser")


def _families(web_url):
    with urllib.request.urlopen(f"{web_url}/metrics", timeout=10) as r:
        assert r.status == 200
        ctype = r.headers.get("Content-Type", "")
        text = r.read().decode()
    assert ctype.startswith("text/plain"), ctype
    return {f.name: f for f in parser.text_string_to_metric_families(text)}


def _value(families, name, **labels):
    fam = families.get(name)
    assert fam is not None, f"metric family {name} missing"
    for s in fam.samples:
        if all(s.labels.get(k) == v for k, v in labels.items()):
            return s.value
    raise AssertionError(f"no sample of {name} with {labels}: {[s.labels for s in fam.samples]}")


def _sample(families, family, sample):
    fam = families.get(family)
    assert fam is not None, f"metric family {family} missing"
    for s in fam.samples:
        if s.name == sample:
            return s.value
    raise AssertionError(f"no sample {sample} in {family}")


def test_metrics_parse_and_count_real_traffic(quire):
    topic = f"persistent://public/default/metrics-{uuid.uuid4().hex[:8]}"
    client = new_client(quire.service_url)
    consumer = client.subscribe(topic, "metrics-sub")
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(7):
        producer.send(b"0123456789")
    consumer.acknowledge(consumer.receive(timeout_millis=10000))
    time.sleep(1.5)  # acks and counters are applied on the broker's loop
    fams = _families(quire.web_url)
    t = dict(topic=topic, namespace="public/default", cluster="standalone")
    assert _value(fams, "pulsar_in_messages", **t) == 7  # "_total" is a counter suffix
    assert _value(fams, "pulsar_out_messages", **t) >= 7
    assert _value(fams, "pulsar_in_bytes", **t) > 70  # payloads plus metadata
    assert _value(fams, "pulsar_storage_size", **t) > 0
    assert _value(fams, "pulsar_producers_count", **t) == 1
    assert _value(fams, "pulsar_consumers_count", **t) == 1
    assert _value(fams, "pulsar_subscription_back_log", subscription="metrics-sub", **t) == 6
    assert _value(fams, "pulsar_subscription_unacked_messages", subscription="metrics-sub", **t) == 6
    assert _value(fams, "pulsar_consumer_available_permits", subscription="metrics-sub", **t) > 0
    assert _value(fams, "process_resident_memory_bytes") > 1_000_000
    assert _value(fams, "process_cpu_seconds") >= 0
    # glibc's view of the heap: in use, and freed but kept
    assert _value(fams, "quire_process_heap_bytes", state="in_use") > 1_000_000
    assert _value(fams, "quire_process_heap_bytes", state="free") >= 0
    assert _value(fams, "pulsar_topics_count", namespace="public/default", cluster="standalone") >= 1
    # Everything dispatched was written to the sockets: nothing left queued.
    assert _value(fams, "quire_broker_write_queue_bytes", cluster="standalone") == 0
    # ...in writes, each carrying at least one frame (frames leave together).
    assert _value(fams, "quire_broker_socket_writes", cluster="standalone") > 0
    # Pulsar's append histograms: 7 durable appends, each in one latency and
    # one size bucket (small entries: the 128-byte bucket).
    lat = [_value(fams, f"pulsar_storage_write_latency_le_{b}", **t)
           for b in ("0_5", "1", "5", "10", "20", "50", "100", "200", "1000", "overflow")]
    assert sum(lat) == 7 and _value(fams, "pulsar_storage_write_latency_count", **t) == 7
    assert _value(fams, "pulsar_storage_write_latency_sum", **t) > 0
    assert _value(fams, "pulsar_entry_size_le_128", **t) == 7
    assert _value(fams, "pulsar_entry_size_count", **t) == 7
    # The in-process bookie, with BookKeeper's names: every add went through
    # the journal, each group with an fdatasync.
    adds = _sample(fams, "bookkeeper_server_ADD_ENTRY", "bookkeeper_server_ADD_ENTRY_count")
    assert adds >= 7
    assert _sample(fams, "bookie_journal_JOURNAL_SYNC", "bookie_journal_JOURNAL_SYNC_count") >= 1
    assert _sample(fams, "bookie_journal_JOURNAL_SYNC", "bookie_journal_JOURNAL_SYNC_sum") > 0
    assert _value(fams, "bookie_ledgers_count") >= 1
    # Adds waiting for write cache room (none at this load) and ever waited.
    assert _value(fams, "bookkeeper_server_ADD_ENTRY_BLOCKED") == 0
    assert _value(fams, "quire_bookie_adds_waited") >= 0
    assert _value(fams, "quire_bookie_reads_waited") >= 0
    # Large reads that yielded to the journal's writes (readYieldToJournalUs).
    assert _value(fams, "quire_bookie_reads_yielded") >= 0
    assert _value(fams, "quire_bookie_reads_yielded_seconds") >= 0
    # Entries read from disk and the reads issued for them (a run of large
    # records read together counts once; no read failed here): never more
    # reads than entries.
    disk_entries = _value(fams, "quire_bookie_disk_read_entries")
    assert 0 <= _value(fams, "quire_bookie_disk_reads") <= disk_entries
    # What the bookie's caches hold now, within their bounds (the server runs
    # with the defaults: two write caches of 16 MiB, a read cache of 16 MiB;
    # the unit tests check the exact figures).
    assert 0 <= _value(fams, "quire_bookie_write_cache_bytes") <= 2 * (16 << 20)
    assert 0 <= _value(fams, "quire_bookie_read_cache_bytes") <= 16 << 20
    assert _value(fams, "quire_bookie_reads_inflight_bytes") >= 0
    # GC's work: present and well-formed. The module's server is shared and
    # may have run a GC pass, so the values are not fixed here; the bookie's
    # unit tests check what they count.
    for name in ("quire_bookie_gc_passes", "quire_bookie_gc_logs_removed",
                 "quire_bookie_gc_logs_compacted",
                 "quire_bookie_gc_compacted_bytes", "quire_bookie_gc_logs_freeing"):
        assert _value(fams, name) >= 0
    # Large entries' direct-log writes (none of this test's entries is large;
    # the shared server may have had some): present, time only with writes.
    direct = _value(fams, "quire_bookie_direct_syncs")
    assert direct >= 0 and _value(fams, "quire_bookie_direct_bytes") >= 0
    assert (_value(fams, "quire_bookie_direct_sync_seconds") > 0) == (direct > 0)
    # Spare files zeroed ahead of their use (spareFileZeroRateMB; the shared
    # server's load decides how many), or entry logs GC removed kept as the
    # direct spare: present, and a file taken was zeroed or such a log.
    taken = sum(_value(fams, "quire_bookie_spare_files_taken", kind=k)
                for k in ("journal", "direct"))
    zeroed = _value(fams, "quire_bookie_spare_zeroed_bytes")
    reused = _value(fams, "quire_bookie_spare_logs_reused")
    assert taken >= 0 and zeroed >= 0 and reused >= 0
    assert taken == 0 or zeroed > 0 or reused > 0
    # The bookie takes adds, its disk below the mark (docs/bookie.md "Disk full").
    assert _value(fams, "bookie_SERVER_STATUS") == 1
    assert _value(fams, "quire_bookie_disk_full") == 0
    assert 0 < _value(fams, "quire_bookie_disk_usage_ratio") < 0.95
    producer.close()
    consumer.close()
    client.close()


def test_publisher_stats_are_measured(quire):
    """Topic stats' publishers carry rates measured from the producer's own sends."""
    import json
    topic_local = f"pubstats-{uuid.uuid4().hex[:8]}"
    client = new_client(quire.service_url)
    producer = client.create_producer(f"persistent://public/default/{topic_local}",
                                      batching_enabled=False)
    for _ in range(40):
        producer.send(b"x" * 100)
        time.sleep(0.02)
    url = f"{quire.web_url}/admin/v2/persistent/public/default/{topic_local}/stats"
    with urllib.request.urlopen(url, timeout=10) as r:
        stats = json.loads(r.read())
    pubs = stats["publishers"]
    assert len(pubs) == 1
    assert pubs[0]["msgRateIn"] > 0
    assert pubs[0]["msgThroughputIn"] > pubs[0]["msgRateIn"] * 100  # payload plus metadata
    assert pubs[0]["averageMsgSize"] > 100
    producer.close()
    client.close()


def test_consumer_stats_are_measured(quire):
    """Topic stats' consumers carry rates measured from what each was sent (they read 0
    before): 40 messages of 100 bytes over about a second."""
    import json
    topic_local = f"consstats-{uuid.uuid4().hex[:8]}"
    topic = f"persistent://public/default/{topic_local}"
    client = new_client(quire.service_url)
    consumer = client.subscribe(topic, "cs")
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(40):
        producer.send(b"x" * 100)
        time.sleep(0.025)
    for _ in range(40):
        consumer.acknowledge(consumer.receive(timeout_millis=10000))
    url = f"{quire.web_url}/admin/v2/persistent/public/default/{topic_local}/stats"
    with urllib.request.urlopen(url, timeout=10) as r:
        stats = json.loads(r.read())
    cons = stats["subscriptions"]["cs"]["consumers"]
    assert len(cons) == 1
    assert cons[0]["msgOutCounter"] == 40
    # 40 messages since it connected, a little over a second ago
    assert 5 < cons[0]["msgRateOut"] <= 40, cons[0]["msgRateOut"]
    assert cons[0]["msgThroughputOut"] > cons[0]["msgRateOut"] * 100  # payload plus metadata
    producer.close()
    consumer.close()
    client.close()


def test_redelivery_rates_are_measured(quire):
    """A consumer that asks for its unacknowledged messages again gets them again, and its
    msgRateRedeliver and its subscription's count them (they read 0 before)."""
    import json
    topic_local = f"redeliver-{uuid.uuid4().hex[:8]}"
    topic = f"persistent://public/default/{topic_local}"
    client = new_client(quire.service_url)
    consumer = client.subscribe(topic, "rd")
    producer = client.create_producer(topic, batching_enabled=False)
    for i in range(20):
        producer.send(f"m-{i}".encode())
    first = [consumer.receive(timeout_millis=10000).data() for _ in range(20)]
    consumer.redeliver_unacknowledged_messages()
    again = [consumer.receive(timeout_millis=10000) for _ in range(20)]
    assert sorted(m.data() for m in again) == sorted(first)
    assert all(m.redelivery_count() >= 1 for m in again)
    for m in again:
        consumer.acknowledge(m)
    url = f"{quire.web_url}/admin/v2/persistent/public/default/{topic_local}/stats"
    with urllib.request.urlopen(url, timeout=10) as r:
        sub = json.loads(r.read())["subscriptions"]["rd"]
    # 20 messages sent again since the consumer connected, a second or two ago at most
    assert sub["msgRateRedeliver"] > 0, sub
    assert sub["consumers"][0]["msgRateRedeliver"] > 0, sub
    assert sub["consumers"][0]["msgOutCounter"] == 40
    producer.close()
    consumer.close()
    client.close()


def _topic_stats(quire, topic_local):
    import json
    url = f"{quire.web_url}/admin/v2/persistent/public/default/{topic_local}/stats"
    with urllib.request.urlopen(url, timeout=10) as r:
        return json.loads(r.read())


def _wait_for(pred, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        v = pred()
        if v:
            return v
        time.sleep(0.25)
    return pred()


def test_rates_follow_traffic_and_quiet(quire):
    """Topic and subscription rates (/metrics and topic stats) are measured
    from traffic, fall to 0 once the topic is quiet although its producer and
    consumer stay connected, and a single burst after the quiet spell counts."""
    topic_local = f"rates-{uuid.uuid4().hex[:8]}"
    topic = f"persistent://public/default/{topic_local}"
    t = dict(topic=topic, namespace="public/default", cluster="standalone")
    client = new_client(quire.service_url)
    consumer = client.subscribe(topic, "rates-sub")
    producer = client.create_producer(topic, batching_enabled=False)
    for _ in range(60):  # ~20 msg/s for 3 s
        producer.send(b"r" * 200)
        time.sleep(0.05)
    for _ in range(60):
        consumer.acknowledge(consumer.receive(timeout_millis=10000))
    fams = _families(quire.web_url)
    assert _value(fams, "pulsar_rate_in", **t) > 5
    assert _value(fams, "pulsar_rate_out", **t) > 5
    assert _value(fams, "pulsar_throughput_in", **t) > 5 * 200
    st = _topic_stats(quire, topic_local)
    assert st["msgRateIn"] > 5 and st["msgRateOut"] > 5
    assert st["subscriptions"]["rates-sub"]["msgRateOut"] > 5

    # Quiet, clients connected: the 5-s window empties and the rates read 0.
    def quiet():
        f = _families(quire.web_url)
        return _value(f, "pulsar_rate_in", **t) == 0 and _value(f, "pulsar_rate_out", **t) == 0
    assert _wait_for(quiet, 15)
    st = _topic_stats(quire, topic_local)
    assert st["msgRateIn"] == 0 and st["subscriptions"]["rates-sub"]["msgRateOut"] == 0

    # One burst after the quiet spell: 30 messages show within the window.
    for _ in range(30):
        producer.send_async(b"s" * 200, None)
    producer.flush()
    for _ in range(30):
        consumer.acknowledge(consumer.receive(timeout_millis=10000))
    time.sleep(1.5)  # one sampling tick at least
    fams = _families(quire.web_url)
    assert _value(fams, "pulsar_rate_in", **t) > 0
    assert _value(fams, "pulsar_rate_out", **t) > 0
    st = _topic_stats(quire, topic_local)
    # 30 messages over a window of at most 5 s: at least 6 msg/s, at most all of them in 1 s
    assert 5.9 <= st["msgRateIn"] <= 31, st["msgRateIn"]
    assert 5.9 <= st["subscriptions"]["rates-sub"]["msgRateOut"] <= 31
    producer.close()
    consumer.close()
    client.close()


def test_entry_cache_metrics_follow_reads(quire):
    """The entry cache's metrics: a tailing consumer is served from the cache
    (hits; each entry then evicted as read), a reader of the same entries after
    they left the cache reads the bookie (misses)."""
    import pulsar
    topic = f"persistent://public/default/cache-{uuid.uuid4().hex[:8]}"
    client = new_client(quire.service_url)
    consumer = client.subscribe(topic, "tail")
    producer = client.create_producer(topic, batching_enabled=False)
    before = _families(quire.web_url)
    cl = dict(cluster="standalone")
    for i in range(20):
        producer.send(f"m-{i}".encode())
    for _ in range(20):
        consumer.acknowledge(consumer.receive(timeout_millis=10000))
    time.sleep(1.5)  # past the 1 s age: nothing of the topic left cached
    mid = _families(quire.web_url)
    assert _value(mid, "quire_ml_cache_hits", **cl) - _value(before, "quire_ml_cache_hits", **cl) >= 20
    assert (_value(mid, "quire_ml_cache_hit_bytes", **cl)
            - _value(before, "quire_ml_cache_hit_bytes", **cl)) >= 20 * 3
    assert (_value(mid, "quire_ml_cache_evictions", reason="read", **cl)
            - _value(before, "quire_ml_cache_evictions", reason="read", **cl)) >= 20
    assert _value(mid, "pulsar_ml_cache_used_size", **cl) >= 0
    assert _value(mid, "quire_ml_cache_entries", **cl) >= 0
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got = [reader.read_next(timeout_millis=10000).data() for _ in range(20)]
    assert got == [f"m-{i}".encode() for i in range(20)]
    after = _families(quire.web_url)
    assert _value(after, "quire_ml_cache_misses", **cl) - _value(mid, "quire_ml_cache_misses", **cl) >= 20
    assert (_value(after, "quire_ml_cache_miss_bytes", **cl)
            - _value(mid, "quire_ml_cache_miss_bytes", **cl)) >= 20 * 3
    reader.close()
    producer.close()
    consumer.close()
    client.close()


def test_labels_escaped_and_topics_counted_per_namespace(quire):
    """Label values with a quote, a backslash and a newline come back intact through
    Prometheus' parser; pulsar_topics_count counts each namespace's topics once."""
    import requests

    ns = f"public/m{uuid.uuid4().hex[:6]}"
    r = requests.put(f"{quire.web_url}/admin/v2/namespaces/{ns}", timeout=10)
    assert r.status_code in (204, 200), r.text
    client = new_client(quire.service_url)
    try:
        topics = [f"persistent://{ns}/t{i}" for i in range(3)]
        for t in topics:
            client.create_producer(t).send(b"x")
        sub = 'sub"q\\b'
        name = 'cons"q\\b\nline'
        client.subscribe(topics[0], sub, consumer_name=name)
        time.sleep(1.5)
        fams = _families(quire.web_url)
        t0 = dict(topic=topics[0], namespace=ns, cluster="standalone")
        assert _value(fams, "pulsar_subscription_back_log", subscription=sub, **t0) == 0
        assert _value(fams, "pulsar_consumer_available_permits", subscription=sub,
                      consumer_name=name, **t0) > 0
        assert _value(fams, "pulsar_topics_count", namespace=ns, cluster="standalone") == 3
        per_ns = [s.labels["namespace"] for s in fams["pulsar_topics_count"].samples]
        assert len(per_ns) == len(set(per_ns)), per_ns  # one sample per namespace
    finally:
        client.close()


def test_namespace_level_metrics_without_topic_level():
    """exposeTopicLevelMetricsInPrometheus=false (Pulsar's key): the per-topic families are
    summed per namespace, labelled {cluster, namespace} only, and subscription and consumer
    families have no samples; topics are still counted per namespace."""
    from compat_helpers import http
    from conftest import QuireServer

    srv = QuireServer(extra_args=["--exposeTopicLevelMetricsInPrometheus=false"]).start()
    try:
        assert http("PUT", f"{srv.web_url}/admin/v2/namespaces/public/agg")[0] in (200, 204)
        tag = uuid.uuid4().hex[:8]
        sends = {f"persistent://public/default/agg-a-{tag}": 3,
                 f"persistent://public/default/agg-b-{tag}": 4,
                 f"persistent://public/agg/agg-c-{tag}": 5}
        client = new_client(srv.service_url)
        consumers = []
        for topic, n in sends.items():
            consumers.append(client.subscribe(topic, "agg-sub"))
            producer = client.create_producer(topic, batching_enabled=False)
            for _ in range(n):
                producer.send(b"0123456789")
        time.sleep(1.5)  # counters are applied on the broker's loop
        fams = _families(srv.web_url)
        d = dict(namespace="public/default", cluster="standalone")
        a = dict(namespace="public/agg", cluster="standalone")
        assert _value(fams, "pulsar_in_messages", **d) == 7
        assert _value(fams, "pulsar_in_messages", **a) == 5
        assert _value(fams, "pulsar_producers_count", **d) == 2
        assert _value(fams, "pulsar_consumers_count", **a) == 1
        assert _value(fams, "pulsar_msg_backlog", **d) == 7
        assert _value(fams, "pulsar_storage_write_latency_count", **d) == 7
        assert _value(fams, "pulsar_topics_count", **d) == 2
        assert _value(fams, "pulsar_topics_count", **a) == 1
        for fam in fams.values():
            for s in fam.samples:
                assert "topic" not in s.labels, (s.name, s.labels)
        for name in ("pulsar_subscription_back_log", "pulsar_consumer_available_permits"):
            assert not fams.get(name) or not fams[name].samples, name
        client.close()
    finally:
        srv.stop()
        srv.cleanup()


def _quantiles(fams, family, **labels):
    """{quantile label: value} of a summary's samples with these labels."""
    fam = fams.get(family)
    assert fam is not None, f"metric family {family} missing"
    assert fam.type == "summary", fam.type
    return {s.labels["quantile"]: s.value for s in fam.samples
            if s.name == family and all(s.labels.get(k) == v for k, v in labels.items())}


def test_latency_summaries_have_quantiles_of_the_last_window():
    """pulsar_broker_publish_latency (Pulsar's quantiles 0.0 ... 1.0) and the bookie's
    JOURNAL_ADD_ENTRY / JOURNAL_SYNC and direct-log summaries (BookKeeper's 0.5 ... 1.0):
    NaN before any window ended; after traffic and a window of statsUpdateFrequencyInSecs=1,
    ordered quantiles in milliseconds that bound what the client measured, and counts of
    what was published; a window without traffic has no quantiles again."""
    import math
    from conftest import QuireServer

    srv = QuireServer(extra_args=["--statsUpdateFrequencyInSecs=1"]).start()
    try:
        cl = dict(cluster="standalone")
        ok = dict(success="true")
        fams = _families(srv.web_url)
        assert all(math.isnan(v) for v in _quantiles(fams, "pulsar_broker_publish_latency",
                                                    **cl).values())
        topic = f"persistent://public/default/lat-{uuid.uuid4().hex[:8]}"
        client = new_client(srv.service_url)
        producer = client.create_producer(topic, batching_enabled=False)
        slowest = 0.0
        for i in range(50):
            t0 = time.monotonic()
            producer.send(b"x" * (70000 if i % 10 == 0 else 100))  # some large: direct log
            slowest = max(slowest, (time.monotonic() - t0) * 1000)
        time.sleep(1.2)  # the window ends; the next read rotates it
        fams = _families(srv.web_url)
        pub = _quantiles(fams, "pulsar_broker_publish_latency", **cl)
        assert sorted(pub) == ["0.0", "0.5", "0.95", "0.99", "0.999", "0.9999", "1.0"]
        vals = [pub[q] for q in ("0.0", "0.5", "0.95", "0.99", "0.999", "0.9999", "1.0")]
        assert all(v > 0 for v in vals) and vals == sorted(vals), pub
        # the loop's iterations: Pulsar's quantile set, in order, many of them
        loop = _quantiles(fams, "quire_broker_loop_iteration_latency", **cl)
        assert sorted(loop) == ["0.0", "0.5", "0.95", "0.99", "0.999", "0.9999", "1.0"]
        lv = [loop[q] for q in ("0.0", "0.5", "0.95", "0.99", "0.999", "0.9999", "1.0")]
        assert all(v >= 0 for v in lv) and lv == sorted(lv) and lv[-1] > 0, loop
        assert _sample(fams, "quire_broker_loop_iteration_latency",
                       "quire_broker_loop_iteration_latency_count") >= 50
        # the broker's part of a send is within what the client waited (+1 % buckets)
        assert pub["1.0"] <= slowest * 1.01 + 0.01, (pub, slowest)
        assert _sample(fams, "pulsar_broker_publish_latency",
                       "pulsar_broker_publish_latency_count") == 50
        assert _sample(fams, "pulsar_broker_publish_latency",
                       "pulsar_broker_publish_latency_sum") > 0
        for family in ("bookie_journal_JOURNAL_ADD_ENTRY", "bookie_journal_JOURNAL_SYNC",
                       "quire_bookie_direct_sync_latency"):
            q = _quantiles(fams, family, **ok)
            assert sorted(q) == ["0.5", "0.75", "0.95", "0.99", "0.999", "0.9999", "1.0"]
            vals = [q[k] for k in ("0.5", "0.75", "0.95", "0.99", "0.999", "0.9999", "1.0")]
            assert all(v > 0 for v in vals) and vals == sorted(vals), (family, q)
        # every add durable through the journal (the server's own ledgers' too)
        assert _sample(fams, "bookie_journal_JOURNAL_ADD_ENTRY",
                       "bookie_journal_JOURNAL_ADD_ENTRY_count") >= 50
        assert _sample(fams, "quire_bookie_direct_sync_latency",
                       "quire_bookie_direct_sync_latency_count") >= 5
        # an add's three parts: one of each per add, their times adding up to its whole
        parts = ("bookie_journal_JOURNAL_QUEUE_LATENCY", "quire_bookie_journal_group_latency",
                 "quire_bookie_add_callback_latency")
        adds = _sample(fams, "bookie_journal_JOURNAL_ADD_ENTRY",
                       "bookie_journal_JOURNAL_ADD_ENTRY_count")
        for family in parts:
            q = _quantiles(fams, family, **ok)
            vals = [q[k] for k in ("0.5", "0.75", "0.95", "0.99", "0.999", "0.9999", "1.0")]
            assert all(v >= 0 for v in vals) and vals == sorted(vals), (family, q)
            assert _sample(fams, family, family + "_count") == adds
        assert _quantiles(fams, "quire_bookie_journal_group_latency", **ok)["1.0"] > 0
        # each part within the whole (+1 % buckets): a stamp missing would wrap to years
        add_max = _quantiles(fams, "bookie_journal_JOURNAL_ADD_ENTRY", **ok)["1.0"]
        for family in parts:
            assert _quantiles(fams, family, **ok)["1.0"] <= add_max * 1.01 + 0.01, family
        whole = _sample(fams, "bookie_journal_JOURNAL_ADD_ENTRY",
                        "bookie_journal_JOURNAL_ADD_ENTRY_sum")
        assert abs(sum(_sample(fams, f, f + "_sum") for f in parts) - whole) < 0.005
        # no roll yet (a new server's first journal file): the summary with nothing in it
        assert _sample(fams, "bookie_journal_JOURNAL_CREATION_LATENCY",
                       "bookie_journal_JOURNAL_CREATION_LATENCY_count") == 0
        # the first large entry made the first direct log: one roll
        assert _sample(fams, "quire_bookie_direct_log_roll_latency",
                       "quire_bookie_direct_log_roll_latency_count") == 1
        time.sleep(2.2)  # two windows without a send
        fams = _families(srv.web_url)
        assert all(math.isnan(v) for v in _quantiles(fams, "pulsar_broker_publish_latency",
                                                    **cl).values())
        assert _sample(fams, "pulsar_broker_publish_latency",
                       "pulsar_broker_publish_latency_count") == 50
        client.close()
    finally:
        srv.stop()
        srv.cleanup()
