"""Subscription types: Exclusive, Shared, Failover, Key_Shared (AUTO_SPLIT, STICKY),
initial position, unsubscribe."""
import threading
import time
from collections import defaultdict

import pulsar
import pytest

from compat_helpers import (assert_nothing_more, drain, key_shared_slot, produce, receive_n,
                            send_all_async)

E = pulsar.InitialPosition.Earliest
CT = pulsar.ConsumerType


def test_exclusive_second_consumer_refused(client, topic):
    c1 = client.subscribe(topic, "ex", consumer_type=CT.Exclusive)
    with pytest.raises(pulsar.ConsumerBusy):
        client.subscribe(topic, "ex", consumer_type=CT.Exclusive)
    # A different subscription on the same topic is fine
    other = client.subscribe(topic, "ex-other", consumer_type=CT.Exclusive)
    produce(client, topic, [b"m0", b"m1"])
    assert [m.data() for m in receive_n(c1, 2, ack=True)] == [b"m0", b"m1"]
    assert [m.data() for m in receive_n(other, 2, ack=True)] == [b"m0", b"m1"]
    c1.close()
    # Once the owner left, a new exclusive consumer is accepted
    c2 = client.subscribe(topic, "ex", consumer_type=CT.Exclusive)
    produce(client, topic, [b"m2"])
    assert receive_n(c2, 1, ack=True)[0].data() == b"m2"
    assert_nothing_more(c2)


def test_shared_round_robin(client, topic):
    c1 = client.subscribe(topic, "sh", consumer_type=CT.Shared, receiver_queue_size=10)
    c2 = client.subscribe(topic, "sh", consumer_type=CT.Shared, receiver_queue_size=10)
    n = 400
    payloads = [f"s-{i}".encode() for i in range(n)]
    producer = client.create_producer(topic, batching_enabled=False)
    got = {0: [], 1: []}
    deadline = time.monotonic() + 60
    sender = threading.Thread(target=lambda: [producer.send(p) for p in payloads])
    sender.start()
    while len(got[0]) + len(got[1]) < n and time.monotonic() < deadline:
        for idx, c in ((0, c1), (1, c2)):
            try:
                m = c.receive(timeout_millis=100)
            except pulsar.Timeout:
                continue
            got[idx].append(m.data())
            c.acknowledge(m)
    sender.join(timeout=60)
    producer.close()
    union = got[0] + got[1]
    assert len(union) == n, f"received {len(union)} of {n}"
    assert len(set(union)) == n, "duplicates"
    assert set(union) == set(payloads)
    assert got[0] and got[1], f"one consumer got nothing: {len(got[0])}/{len(got[1])}"
    assert_nothing_more(c1, 300)
    assert_nothing_more(c2, 300)


def test_failover_one_active_then_takeover(client, topic):
    ca = client.subscribe(topic, "fo", consumer_type=CT.Failover, consumer_name="a")
    cb = client.subscribe(topic, "fo", consumer_type=CT.Failover, consumer_name="b")
    time.sleep(0.5)
    produce(client, topic, [f"f-{i}".encode() for i in range(20)])
    got_a = drain(ca, 1500, ack=True)
    got_b = drain(cb, 1500, ack=True)
    assert sorted([len(got_a), len(got_b)]) == [0, 20], \
        f"failover: both consumers received ({len(got_a)}, {len(got_b)})"
    active, standby = (ca, cb) if got_a else (cb, ca)
    first = got_a or got_b
    assert [m.data() for m in first] == [f"f-{i}".encode() for i in range(20)]
    active.close()
    time.sleep(0.5)
    produce(client, topic, [f"g-{i}".encode() for i in range(20)])
    second = receive_n(standby, 20, ack=True)
    assert [m.data() for m in second] == [f"g-{i}".encode() for i in range(20)]
    assert_nothing_more(standby)


def _collect_in_threads(consumers, total, deadline_s, ack=True, records=None, stop=None):
    """Each consumer receives in its own thread until `total` distinct messages arrived."""
    lock = threading.Lock()
    per = [[] for _ in consumers]
    seen = set()
    stop = stop or threading.Event()

    def run(i, c):
        while not stop.is_set():
            try:
                m = c.receive(timeout_millis=200)
            except pulsar.Timeout:
                continue
            except pulsar.AlreadyClosed:
                return
            t = time.monotonic()
            with lock:
                per[i].append(m.data())
                if records is not None:
                    records.append((t, i, m.data()))
                seen.add(m.data())
                if len(seen) >= total:
                    stop.set()
            if ack:
                try:
                    c.acknowledge(m)
                except pulsar.PulsarException:
                    pass

    threads = [threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(consumers)]
    for t in threads:
        t.start()
    stop.wait(deadline_s)
    stop.set()
    for t in threads:
        t.join(timeout=5)
    return per


def _parse(data):
    k, s = data.decode().split(":")
    return k, int(s)


def test_key_shared_auto_split_10000_batched_zstd(client, topic):
    nkeys, n = 50, 10000
    policy = pulsar.ConsumerKeySharedPolicy(pulsar.KeySharedMode.AutoSplit)
    consumers = [client.subscribe(topic, "ks", consumer_type=CT.KeyShared, key_shared_policy=policy,
                                  consumer_name=f"ks-{i}", initial_position=E)
                 for i in range(3)]
    producer = client.create_producer(topic, batching_enabled=True, batching_max_messages=200,
                                      batching_type=pulsar.BatchingType.KeyBased,
                                      compression_type=pulsar.CompressionType.ZSTD,
                                      max_pending_messages=20000, block_if_queue_full=True)
    seq = defaultdict(int)
    payloads, keys = [], []
    for i in range(n):
        k = f"key-{(i * 7) % nkeys}"
        payloads.append(f"{k}:{seq[k]}".encode())
        keys.append(k)
        seq[k] += 1
    ids = [None] * n
    done = threading.Event()
    cnt = [0]
    lock = threading.Lock()

    def cb_for(i):
        def cb(res, mid):
            assert res == pulsar.Result.Ok
            with lock:
                cnt[0] += 1
                if cnt[0] == n:
                    done.set()
        return cb

    for i in range(n):
        producer.send_async(payloads[i], cb_for(i), partition_key=keys[i])
    producer.flush()
    assert done.wait(60), f"{cnt[0]} of {n} receipts"
    per = _collect_in_threads(consumers, n, 120)
    all_msgs = [x for lst in per for x in lst]
    assert len(set(all_msgs)) == n, f"received {len(set(all_msgs))} distinct of {n}"
    assert len(all_msgs) == n, f"{len(all_msgs) - n} duplicates"
    owner = {}
    for ci, lst in enumerate(per):
        last = {}
        for data in lst:
            k, s = _parse(data)
            assert owner.setdefault(k, ci) == ci, f"key {k} delivered to two consumers"
            assert s == last.get(k, -1) + 1, f"key {k}: {s} after {last.get(k)} on consumer {ci}"
            last[k] = s
    assert sum(1 for lst in per if lst) >= 2, "all keys went to a single consumer"
    # Everything acked: nothing comes back
    time.sleep(0.5)
    for c in consumers:
        assert_nothing_more(c, 500)
    producer.close()


def test_key_shared_order_kept_when_consumers_join_and_leave(client, topic):
    nkeys, n = 20, 3000
    policy = pulsar.ConsumerKeySharedPolicy(pulsar.KeySharedMode.AutoSplit)
    sub = lambda name: client.subscribe(topic, "ksj", consumer_type=CT.KeyShared, key_shared_policy=policy,
                                        consumer_name=name, initial_position=E, receiver_queue_size=50)
    c0, c1 = sub("j0"), sub("j1")
    producer = client.create_producer(topic, batching_enabled=False, max_pending_messages=5000)
    records = []
    stop = threading.Event()
    consumers = [c0, c1]
    # Collect with a dynamic consumer set: threads started per consumer
    lock = threading.Lock()
    seen = set()

    def run(i, c):
        while not stop.is_set():
            try:
                m = c.receive(timeout_millis=100)
            except pulsar.Timeout:
                continue
            except pulsar.PulsarException:
                return
            with lock:
                records.append((time.monotonic(), i, m.data()))
                seen.add(m.data())
                if len(seen) >= n:
                    stop.set()
            try:
                c.acknowledge(m)
            except pulsar.PulsarException:
                return

    threads = []

    def start(i, c):
        t = threading.Thread(target=run, args=(i, c), daemon=True)
        t.start()
        threads.append(t)

    start(0, c0)
    start(1, c1)
    seq = defaultdict(int)
    for i in range(n):
        k = f"k{i % nkeys}"
        producer.send_async(f"{k}:{seq[k]}".encode(), lambda r, m: None, partition_key=k)
        seq[k] += 1
        if i == n // 3:
            c2 = sub("j2")
            consumers.append(c2)
            start(2, c2)
        if i == 2 * n // 3:
            closed_at = time.monotonic()
            c0.close()  # leaves with messages possibly still in its receiver queue
        if i % 100 == 0:
            time.sleep(0.05)
    producer.flush()
    stop.wait(90)
    stop.set()
    for t in threads:
        t.join(timeout=5)
    producer.close()
    assert len(seen) == n, f"received {len(seen)} distinct of {n}"
    # Per key, in the order the application saw them (first occurrence), sequence is 0,1,2,...
    # What j0's thread took from its client-side queue once close() began is not
    # counted: the broker already gives those messages, unacknowledged, to the
    # keys' new owners (and they are counted there); the client may still hand
    # them out while it closes, which says nothing about the broker's order.
    # A message j0's application took and acknowledged before the broker had its
    # close is not sent again; it counts where j0 received it.
    by_key = defaultdict(list)
    elsewhere = {data for _, ci, data in records if ci != 0}
    for t, ci, data in sorted(records):
        if ci == 0 and t >= closed_at and data in elsewhere:
            continue
        k, s = _parse(data)
        if s not in by_key[k]:
            by_key[k].append(s)
    for k, seqs in by_key.items():
        assert seqs == list(range(len(seqs))), f"key {k} out of order: {seqs[:50]}"


def test_key_shared_sticky_ranges(client, topic):
    KS = pulsar.KeySharedMode.Sticky
    ca = client.subscribe(topic, "sticky", consumer_type=CT.KeyShared,
                          key_shared_policy=pulsar.ConsumerKeySharedPolicy(KS, sticky_ranges=[(0, 32767)]))
    cb = client.subscribe(topic, "sticky", consumer_type=CT.KeyShared,
                          key_shared_policy=pulsar.ConsumerKeySharedPolicy(KS, sticky_ranges=[(32768, 65535)]))
    with pytest.raises(pulsar.PulsarException):
        client.subscribe(topic, "sticky", consumer_type=CT.KeyShared,
                         key_shared_policy=pulsar.ConsumerKeySharedPolicy(KS, sticky_ranges=[(100, 200)]))
    keys = [f"sk-{i}" for i in range(40)]
    slots = {k: key_shared_slot(k) for k in keys}
    assert any(s <= 32767 for s in slots.values()) and any(s > 32767 for s in slots.values())
    producer = client.create_producer(topic, batching_enabled=False)
    sent = []
    for r in range(5):
        for k in keys:
            data = f"{k}:{r}".encode()
            producer.send(data, partition_key=k)
            sent.append(data)
    producer.close()
    per = _collect_in_threads([ca, cb], len(sent), 60)
    assert sorted(per[0] + per[1]) == sorted(sent)
    for ci, lst in enumerate(per):
        last = {}
        for data in lst:
            k, s = _parse(data)
            expect = 0 if slots[k] <= 32767 else 1
            assert ci == expect, f"key {k} (slot {slots[k]}) delivered to consumer {ci}"
            assert s == last.get(k, -1) + 1
            last[k] = s


def test_initial_position_earliest_and_latest(client, topic):
    produce(client, topic, [f"old-{i}".encode() for i in range(5)])
    early = client.subscribe(topic, "early", initial_position=pulsar.InitialPosition.Earliest)
    late = client.subscribe(topic, "late", initial_position=pulsar.InitialPosition.Latest)
    produce(client, topic, [f"new-{i}".encode() for i in range(5)])
    assert [m.data() for m in receive_n(early, 10, ack=True)] == \
        [f"old-{i}".encode() for i in range(5)] + [f"new-{i}".encode() for i in range(5)]
    assert [m.data() for m in receive_n(late, 5, ack=True)] == [f"new-{i}".encode() for i in range(5)]
    assert_nothing_more(early)
    assert_nothing_more(late)
    # initialPosition applies only when the subscription is created: an existing
    # subscription resumes at its cursor whatever the consumer asks for.
    late.close()
    produce(client, topic, [b"while-away"])
    again = client.subscribe(topic, "late", initial_position=pulsar.InitialPosition.Earliest)
    assert [m.data() for m in receive_n(again, 1, ack=True)] == [b"while-away"]
    assert_nothing_more(again)


def test_unsubscribe_deletes_subscription(client, topic):
    c = client.subscribe(topic, "gone", initial_position=E)
    produce(client, topic, [f"u-{i}".encode() for i in range(5)])
    assert len(receive_n(c, 5)) == 5  # received, not acknowledged
    c.unsubscribe()
    # Recreated at Latest: if the old cursor survived, the 5 unacked would come back
    c2 = client.subscribe(topic, "gone", initial_position=pulsar.InitialPosition.Latest)
    assert_nothing_more(c2)
    produce(client, topic, [b"fresh"])
    assert [m.data() for m in receive_n(c2, 1, ack=True)] == [b"fresh"]
    assert_nothing_more(c2)
