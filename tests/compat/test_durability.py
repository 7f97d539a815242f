"""Durability: kill -9 mid-stream and restart; SIGTERM restart; subscription positions
(individual acks with holes, cumulative) survive; message ids never reused.

Env QUIRE_COMPAT_ACK_LOSS_ALLOWED (default 0): how many acknowledged messages a
subscription may get again after a kill -9 (acks given >= 1 s before the kill). Quire
claims every subscription position survives a crash, so the default is 0."""
import json
import os
import urllib.request
import threading
import time

import pulsar
import pytest

from compat_helpers import assert_nothing_more, drain, drain_reader, mid_key, new_client, receive_n

pytestmark = pytest.mark.needs_restart

E = pulsar.InitialPosition.Earliest
ACK_LOSS_ALLOWED = int(os.environ.get("QUIRE_COMPAT_ACK_LOSS_ALLOWED", "0"))


def _close_quietly(client):
    t = threading.Thread(target=lambda: _try(client.close), daemon=True)
    t.start()
    t.join(timeout=20)


def _try(f):
    try:
        f()
    except Exception:
        pass


def test_kill9_mid_stream_keeps_every_receipted_message(fresh_quire):
    srv = fresh_quire
    topic = "persistent://public/default/crash-stream"
    client = new_client(srv.service_url)
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=20,
                                      batching_max_publish_delay_ms=5, max_pending_messages=200,
                                      block_if_queue_full=True, send_timeout_millis=5000)
    acked = []          # indexes with a receipt
    lock = threading.Lock()
    stop = threading.Event()
    sent_count = [0]

    def cb_for(i):
        def cb(res, mid):
            if res == pulsar.Result.Ok:
                with lock:
                    acked.append((i, mid_key(mid)))
        return cb

    def pump():
        i = 0
        while not stop.is_set() and i < 200000:
            try:
                producer.send_async(f"crash-{i:07d}".encode(), cb_for(i))
            except Exception:
                break
            i += 1
            sent_count[0] = i
            if i % 50 == 0:
                time.sleep(0.002)

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with lock:
            if len(acked) >= 3000:
                break
        time.sleep(0.05)
    srv.kill9()
    stop.set()
    t.join(timeout=20)
    time.sleep(0.5)
    with lock:
        receipted = dict(acked)
    _close_quietly(client)
    assert len(receipted) >= 3000, f"only {len(receipted)} receipts before the kill"

    srv.start()
    client = new_client(srv.service_url)
    reader = client.create_reader(topic, pulsar.MessageId.earliest)
    got = drain_reader(reader, quiet_ms=3000, limit=sent_count[0] + 10)
    reader.close()
    idx = [int(m.data().decode().split("-")[1]) for m in got]
    assert idx == sorted(idx), "order changed across the crash"
    assert len(idx) == len(set(idx)), "duplicates after the crash"
    missing = set(receipted) - set(idx)
    assert not missing, f"{len(missing)} receipted messages lost, e.g. {sorted(missing)[:10]}"
    # The ids read are the ids the receipts named
    by_idx = {int(m.data().decode().split("-")[1]): mid_key(m.message_id()) for m in got}
    wrong = [i for i, k in receipted.items() if by_idx[i] != k]
    assert not wrong, f"ids differ from receipts for {wrong[:5]}"
    # New messages get ids after every old one (ids never reused)
    p = client.create_producer(topic, batching_enabled=False)
    new_id = mid_key(p.send(b"after-restart"))
    p.close()
    assert new_id > max(by_idx.values())
    client.close()


def _subscription_resumes(srv, kill):
    topic = f"persistent://public/default/resume-{'kill' if kill else 'term'}"
    client = new_client(srv.service_url)
    c = client.subscribe(topic, "durable", initial_position=E)
    cum = client.subscribe(topic, "durable-cum", initial_position=E)
    p = client.create_producer(topic, batching_enabled=False)
    sent = [f"r-{i}".encode() for i in range(100)]
    ids = [p.send(x) for x in sent]
    msgs = receive_n(c, 100)
    holes = {10, 20, 35}
    for i, m in enumerate(msgs[:60]):
        if i not in holes:
            c.acknowledge(m)
    cmsgs = receive_n(cum, 100)
    cum.acknowledge_cumulative(cmsgs[49])
    time.sleep(1.5)  # acks flushed (grouping) and stored
    if kill:
        srv.kill9()
    else:
        rc = srv.stop()
        # 0, or 143 (128 + SIGTERM) as a JVM exits after its shutdown hooks; negative
        # means it died from a signal (SIGKILL after the stop bound: not a clean stop).
        assert rc in (0, 143), f"SIGTERM exit status {rc}"
    _close_quietly(client)
    srv.start()
    client = new_client(srv.service_url)
    c = client.subscribe(topic, "durable", initial_position=E)
    got = [m.data() for m in drain(c, 3000, ack=True)]
    expect = [sent[i] for i in sorted(holes)] + sent[60:]
    extra = [x for x in got if x not in expect]
    assert len(extra) <= ACK_LOSS_ALLOWED, \
        f"{len(extra)} acknowledged messages redelivered after restart: {extra[:10]}"
    assert [x for x in got if x in expect] == expect, "unacknowledged messages lost or reordered"
    cum = client.subscribe(topic, "durable-cum", initial_position=E)
    cgot = [m.data() for m in drain(cum, 3000, ack=True)]
    cextra = [x for x in cgot if x not in sent[50:]]
    assert len(cextra) <= ACK_LOSS_ALLOWED, f"cumulatively acked messages redelivered: {cextra[:10]}"
    assert [x for x in cgot if x in sent[50:]] == sent[50:]
    # Producing continues after the old ids
    p = client.create_producer(topic, batching_enabled=False)
    assert mid_key(p.send(b"more")) > mid_key(ids[-1])
    p.close()
    assert receive_n(c, 1, ack=True)[0].data() == b"more"
    client.close()


def test_kill9_subscription_resumes_after_last_ack(fresh_quire):
    _subscription_resumes(fresh_quire, kill=True)


def test_sigterm_subscription_resumes_after_last_ack(fresh_quire):
    _subscription_resumes(fresh_quire, kill=False)


def test_restart_twice_and_unsubscribe_persists(fresh_quire):
    srv = fresh_quire
    topic = "persistent://public/default/restart-twice"
    client = new_client(srv.service_url)
    keep = client.subscribe(topic, "keep", initial_position=E)
    gone = client.subscribe(topic, "gone", initial_position=E)
    p = client.create_producer(topic, batching_enabled=False)
    for i in range(10):
        p.send(f"t-{i}".encode())
    receive_n(keep, 5, ack=True)
    gone.unsubscribe()
    time.sleep(1)
    _close_quietly(client)
    srv.restart(kill=True)
    srv.restart(kill=False)
    client = new_client(srv.service_url)
    # A producer loads the topic; the persisted subscription "keep" is back
    # before any consumer attaches, and "gone" stays deleted.
    p = client.create_producer(topic)
    subs_url = f"{srv.web_url}/admin/v2/persistent/public/default/restart-twice/subscriptions"
    with urllib.request.urlopen(subs_url, timeout=10) as r:
        assert sorted(json.loads(r.read())) == ["keep"]
    keep = client.subscribe(topic, "keep", initial_position=E)
    assert [m.data() for m in receive_n(keep, 5, ack=True)] == [f"t-{i}".encode() for i in range(5, 10)]
    assert_nothing_more(keep)
    # "gone" was deleted: recreated at Latest it has no backlog
    gone = client.subscribe(topic, "gone", initial_position=pulsar.InitialPosition.Latest)
    assert_nothing_more(gone)
    # (Everything was consumed by every subscription and the namespace keeps no
    # retention, so whether a reader from earliest still finds the consumed
    # messages depends on when ledgers are trimmed: not asserted here.)
    p.close()
    client.close()


def test_open_files_soft_limit_raised_to_hard():
    """The server holds a descriptor per connection and two per entry log: it raises
    its soft RLIMIT_NOFILE to the hard limit (started here under a soft limit of 256)."""
    import resource
    from conftest import QuireServer

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard <= 256:
        pytest.skip(f"hard open-files limit {hard} leaves nothing to raise")
    resource.setrlimit(resource.RLIMIT_NOFILE, (256, hard))
    try:
        srv = QuireServer().start()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    try:
        with open(f"/proc/{srv.proc.pid}/limits") as f:
            line = next(x for x in f if x.startswith("Max open files"))
        fields = line.split()
        want = "unlimited" if hard == resource.RLIM_INFINITY else str(hard)
        assert fields[3] == want and fields[4] == want, line
        client = new_client(srv.service_url)
        try:
            producer = client.create_producer("persistent://public/default/nofile")
            producer.send(b"x")
        finally:
            _close_quietly(client)
    finally:
        srv.stop()
        srv.cleanup()


def test_small_bookie_caches_keep_every_message_across_kill9():
    """dbStorage_writeCacheMaxSizeMb=1 (a flush every megabyte) and no read cache: 4,000
    unbatched 1-KiB messages on three topics are flushed in dozens of runs of the bookie's
    index; after a kill -9 every one is read back from the entry logs, in order."""
    from conftest import QuireServer

    srv = QuireServer(extra_args=["--dbStorage_writeCacheMaxSizeMb=1",
                                  "--dbStorage_readAheadCacheMaxSizeMb=0"]).start()
    try:
        topics = [f"persistent://public/default/small-caches-{t}" for t in range(3)]
        client = new_client(srv.service_url)
        for t in topics:  # the subscriptions keep the backlog
            client.subscribe(t, "s", initial_position=E).close()
        producers = [client.create_producer(t, batching_enabled=False) for t in topics]
        n = 4000
        for i in range(n):
            producers[i % 3].send(f"{i:06d}".encode() + b"x" * 1018)
        _close_quietly(client)
        srv.restart(kill=True)
        client = new_client(srv.service_url)
        for k, t in enumerate(topics):
            c = client.subscribe(t, "s", initial_position=E)
            got = [int(m.data()[:6]) for m in receive_n(c, len(range(k, n, 3)), ack=True)]
            assert got == list(range(k, n, 3))
            assert_nothing_more(c)
        _close_quietly(client)
    finally:
        srv.stop()
        srv.cleanup()


def _metric(web_url, name):
    with urllib.request.urlopen(f"{web_url}/metrics", timeout=10) as r:
        for line in r.read().decode().splitlines():
            if line.startswith(name + "{") or line.startswith(name + " "):
                return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def test_reads_in_flight_bound_delivers_every_backlog():
    """managedLedgerMaxReadsInFlightSizeInMB=1 with no entry cache: four subscriptions
    catching up a 12-MB backlog at once read from the ledgers through a 1-MB bound. Reads
    wait for room (quire_ml_reads_waited_total counts them) and every subscription gets
    every message, in order; nothing stays held afterwards."""
    from conftest import QuireServer

    srv = QuireServer(extra_args=["--managedLedgerMaxReadsInFlightSizeInMB=1",
                                  "--managedLedgerCacheSizeMB=0"]).start()
    try:
        topic = "persistent://public/default/reads-bound"
        subs = [f"s{k}" for k in range(4)]
        client = new_client(srv.service_url)
        for s in subs:  # the subscriptions keep the backlog
            client.subscribe(topic, s, initial_position=E).close()
        # block_if_queue_full: past the client's 1,000 pending sends, send_async
        # waits instead of failing the send
        producer = client.create_producer(topic, batching_enabled=False,
                                          block_if_queue_full=True)
        n = 1500
        results = []
        for i in range(n):
            producer.send_async(f"{i:06d}".encode() + b"x" * 8186,
                                lambda res, mid: results.append(res))
        producer.flush()
        deadline = time.monotonic() + 30
        while len(results) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        assert results.count(pulsar.Result.Ok) == n, set(results)
        consumers = [client.subscribe(topic, s, initial_position=E) for s in subs]
        got = {}

        def drain_one(k):
            got[k] = [int(m.data()[:6]) for m in receive_n(consumers[k], n, ack=True)]

        threads = [threading.Thread(target=drain_one, args=(k,)) for k in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=120)
        for k in range(4):
            assert got.get(k) == list(range(n)), f"subscription {subs[k]}"
            assert_nothing_more(consumers[k])
        assert _metric(srv.web_url, "quire_ml_reads_waited_total") > 0
        assert _metric(srv.web_url, "quire_ml_reads_waiting") == 0
        assert _metric(srv.web_url, "quire_ml_reads_inflight_bytes") == 0
        _close_quietly(client)
    finally:
        srv.stop()
        srv.cleanup()


def _summaries(srv):
    return sorted(p.name for p in (srv.data_dir / "bookie" / "ledgers").glob("*.sum"))


def test_index_summaries_serve_every_message_across_restarts():
    """A clean stop writes the bookie's index summaries (one .sum per entry log), and the
    next start builds its index from them; after a kill -9 the entries added since are
    found in the .idx files. No read cache and no broker entry cache, a flush every
    megabyte: 3,000 + 900 unbatched messages on three topics, read back from the entry
    logs after each kind of restart, every one, in order."""
    from conftest import QuireServer

    srv = QuireServer(extra_args=["--dbStorage_writeCacheMaxSizeMb=1",
                                  "--dbStorage_readAheadCacheMaxSizeMb=0",
                                  "--managedLedgerCacheSizeMB=0"]).start()
    try:
        topics = [f"persistent://public/default/summaries-{t}" for t in range(3)]
        client = new_client(srv.service_url)
        for t in topics:  # the subscriptions keep the backlog
            client.subscribe(t, "s", initial_position=E).close()
        producers = [client.create_producer(t, batching_enabled=False) for t in topics]
        for i in range(3000):
            producers[i % 3].send(f"{i:06d}".encode() + b"s" * 700)
        _close_quietly(client)
        srv.restart(kill=False)
        first = _summaries(srv)
        assert first, "a clean stop wrote no index summary"
        assert sorted(p.name[:-4] + ".idx" for p in
                      (srv.data_dir / "bookie" / "ledgers").glob("*.sum")) == sorted(
            p.name for p in (srv.data_dir / "bookie" / "ledgers").glob("*.idx")
            if p.stat().st_size > 0)

        client = new_client(srv.service_url)
        producers = [client.create_producer(t, batching_enabled=False) for t in topics]
        for i in range(3000, 3900):
            producers[i % 3].send(f"{i:06d}".encode() + b"s" * 700)
        _close_quietly(client)
        srv.restart(kill=True)  # no summaries for what came since
        assert _summaries(srv) == first

        for round_ in range(2):
            client = new_client(srv.service_url)
            for k, t in enumerate(topics):
                c = client.subscribe(t, f"r{round_}", initial_position=E)
                want = list(range(k, 3900, 3))
                got = [int(m.data()[:6]) for m in receive_n(c, len(want), ack=True)]
                assert got == want
                assert_nothing_more(c)
                c.close()
            _close_quietly(client)
            srv.restart(kill=False)  # the second round reads through new summaries
            assert len(_summaries(srv)) > len(first)
    finally:
        srv.stop()
        srv.cleanup()


def test_full_disk_refuses_producers_and_still_serves_reads():
    """The bookie's disk at diskUsageThreshold (here a mark below any real usage, so the
    restarted server finds it full at its first check): the topic still loads and its 20
    messages are delivered, a producer is refused with a retriable error (the client gives
    up at its operation timeout; nothing hangs, nothing is stored), /metrics shows the
    bookie read-only and the log says why; restarted with the default marks, publishing
    goes on."""
    from conftest import QuireServer

    srv = QuireServer().start()
    topic = "persistent://public/default/disk-full"
    try:
        client = new_client(srv.service_url)
        client.subscribe(topic, "s", initial_position=E).close()
        producer = client.create_producer(topic, batching_enabled=False)
        for i in range(20):
            producer.send(f"m-{i}".encode())
        _close_quietly(client)
        srv.extra_args = ["--diskUsageThreshold=0.000001", "--diskUsageLwmThreshold=0.000001"]
        srv.restart()

        client = new_client(srv.service_url, operation_timeout_seconds=3)
        consumer = client.subscribe(topic, "s", initial_position=E)
        got = receive_n(consumer, 20, ack=True)
        assert [m.data() for m in got] == [f"m-{i}".encode() for i in range(20)]
        t0 = time.monotonic()
        with pytest.raises(Exception):
            client.create_producer(topic, batching_enabled=False, send_timeout_millis=3000)
        assert time.monotonic() - t0 < 20
        with urllib.request.urlopen(f"{srv.web_url}/metrics", timeout=10) as r:
            text = r.read().decode()
        assert "\nbookie_SERVER_STATUS 0\n" in text
        assert "\nquire_bookie_disk_full 1\n" in text
        log = srv.log_tail(400)
        assert "diskUsageThreshold" in log
        assert "not enough writable bookies" in log
        _close_quietly(client)

        srv.extra_args = []
        srv.restart()
        client = new_client(srv.service_url)
        consumer = client.subscribe(topic, "s", initial_position=E)
        producer = client.create_producer(topic, batching_enabled=False)
        producer.send(b"after")
        got = drain(consumer, ack=True)
        assert [m.data() for m in got] == [b"after"]
        _close_quietly(client)
    finally:
        srv.cleanup()
