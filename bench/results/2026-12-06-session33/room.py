#!/usr/bin/env python3
"""No room for a flush, on a real file system: a 1-GiB ext4 image mounted on a
loop device holds a quire standalone's data; after 2,000 messages are acknowledged,
a filler takes every free block; messages sent then are refused once the next flush
fails for lack of room; the filler is removed; messages are taken again; every
acknowledged message is read back, before and after a restart. Run as root:
python3 room.py [QUIRE_BINARY] [PADDING_BYTES] (500 by default: entries for the write
cache; 65000: entries for a direct log)."""
import os, re, socket, subprocess, sys, time, urllib.request
import pulsar

QUIRE = sys.argv[1] if len(sys.argv) > 1 else "/work/main/build/src/quire"
SIZE = int(sys.argv[2]) if len(sys.argv) > 2 else 500  # bytes of padding per message
IMG, MNT = "/var/tmp/qroom.img", "/mnt/qroom"

def sh(*a, check=True):
    return subprocess.run(a, check=check, capture_output=True, text=True)

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def metric(wp, name):
    t = urllib.request.urlopen(f"http://127.0.0.1:{wp}/metrics", timeout=5).read().decode()
    m = re.search(r"^%s (\S+)$" % re.escape(name), t, re.M)
    return float(m.group(1)) if m else None

def start(bp, wp, log):
    p = subprocess.Popen([QUIRE, "standalone", "--data-dir", MNT + "/data",
                          "--bindAddress=127.0.0.1", "--advertisedAddress=127.0.0.1",
                          f"--brokerServicePort={bp}", f"--webServicePort={wp}",
                          "--spareFileZeroRateMB=0"], stdout=log, stderr=subprocess.STDOUT)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", wp), 0.2).close(); return p
        except OSError:
            time.sleep(0.05)
    raise SystemExit("quire did not start")

def fill():
    st = os.statvfs(MNT)
    n = st.f_bfree * st.f_bsize - (1 << 20)
    while n > 0 and sh("fallocate", "-l", str(n), MNT + "/filler", check=False).returncode:
        n -= 8 << 20
    with open(MNT + "/filler2", "wb") as f:  # the last blocks
        try:
            while True:
                f.write(b"\0" * 65536); f.flush(); os.fsync(f.fileno())
        except OSError as e:
            print("filler: file system full:", e.strerror)

def read_all(client, sub, timeout_ms=3000):
    c = client.subscribe("room", sub, initial_position=pulsar.InitialPosition.Earliest)
    got = set()
    while True:
        try:
            m = c.receive(timeout_millis=timeout_ms)
        except Exception:
            break
        got.add(m.data().decode()); c.acknowledge(m)
    c.close()
    return got

def main():
    sh("umount", MNT, check=False)
    sh("truncate", "-s", "0", IMG); sh("truncate", "-s", "1G", IMG)
    sh("mkfs.ext4", "-q", "-F", IMG); os.makedirs(MNT, exist_ok=True)
    sh("mount", "-o", "loop", IMG, MNT)
    bp, wp = free_port(), free_port()
    log = open("/tmp/s33/room-quire.log", "w")
    q = start(bp, wp, log)
    acked = set()
    try:
        client = pulsar.Client(f"pulsar://127.0.0.1:{bp}", operation_timeout_seconds=10)
        for sub in ("s1", "s2"):  # both from the start: nothing is trimmed before each reads
            client.subscribe("room", sub, initial_position=pulsar.InitialPosition.Earliest).close()
        p = client.create_producer("room", batching_enabled=False, send_timeout_millis=5000)
        for i in range(2000):
            p.send(("a-%06d-" % i).encode() + b"x" * SIZE); acked.add(("a-%06d-" % i) + "x" * SIZE)
        print("phase 1: 2000 acknowledged")
        fill()
        res = {}
        def cb(i):
            return lambda r, mid: res.__setitem__(i, r)
        t0 = time.time(); refused_at = None; i = 0
        while time.time() - t0 < 30 and refused_at is None:
            for _ in range(200):
                p.send_async(("b-%06d-" % i).encode() + b"x" * SIZE, cb(i)); i += 1
            try:
                p.flush()
            except Exception as e:
                print("flush:", e)
            time.sleep(0.1)
            if metric(wp, "quire_bookie_flush_stalled") == 1:
                refused_at = time.time() - t0
        for _ in range(200):  # sent while the flush waits for room: refused
            p.send_async(("b-%06d-" % i).encode() + b"x" * SIZE, cb(i)); i += 1
        time.sleep(8)
        ok = [k for k, r in res.items() if r == pulsar.Result.Ok]
        for k in ok:
            acked.add(("b-%06d-" % k) + "x" * SIZE)
        print(f"phase 2: {i} sent, {len(ok)} acknowledged, {len(res) - len(ok)} failed; "
              f"stalled after {refused_at} s; flush_stalled={metric(wp, 'quire_bookie_flush_stalled')} "
              f"stalls={metric(wp, 'quire_bookie_flush_stalls_total')} "
              f"status={metric(wp, 'bookie_SERVER_STATUS')} disk_full={metric(wp, 'quire_bookie_disk_full')}")
        os.unlink(MNT + "/filler"); os.unlink(MNT + "/filler2")
        t1 = time.time()
        while time.time() - t1 < 60 and metric(wp, "bookie_SERVER_STATUS") != 1:
            time.sleep(0.5)
        print(f"filler removed: writable again after {time.time() - t1:.1f} s; "
              f"flush_stalled={metric(wp, 'quire_bookie_flush_stalled')} "
              f"stalls={metric(wp, 'quire_bookie_flush_stalls_total')}")
        try:
            p.close()
        except Exception:
            pass
        try:
            k = 0
            p = client.create_producer("room", batching_enabled=False, send_timeout_millis=10000)
            for k in range(2000):
                p.send(("c-%06d-" % k).encode() + b"x" * SIZE); acked.add(("c-%06d-" % k) + "x" * SIZE)
            print("phase 3: 2000 acknowledged")
        except Exception as e:
            print(f"phase 3: {k} acknowledged, then {e}")
        got = read_all(client, "s1")
        print(f"read back: {len(acked & got)} of {len(acked)} acknowledged "
              f"(missing {len(acked - got)}); {len(got)} in all")
        client.close()
        q.terminate(); q.wait(30)
        q = start(bp, wp, log)
        client = pulsar.Client(f"pulsar://127.0.0.1:{bp}", operation_timeout_seconds=10)
        got = read_all(client, "s2")
        print(f"after a restart: {len(acked & got)} of {len(acked)} acknowledged "
              f"(missing {len(acked - got)}); {len(got)} in all")
        client.close()
        return 0 if acked <= got else 1
    finally:
        q.terminate()
        try:
            q.wait(30)
        except Exception:
            q.kill()
        sh("umount", MNT, check=False)
        os.unlink(IMG)

sys.exit(main())
