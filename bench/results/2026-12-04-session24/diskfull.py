"""A real disk filling up under a `quire standalone`: a filler file leaves the bookie's
file system HEADROOM_GB above the 95 % mark (BookKeeper's usage: 1 - available/total);
a Python producer sends 64-KiB messages as fast as it can and prints, each second, the
sends acknowledged and failed and the server's disk gauges. At FREE_AT_S the filler is
removed. Usage: python3 diskfull.py QUIRE_BIN WORKDIR (WORKDIR on the file system to fill).
"""
import os, socket, subprocess, sys, threading, time, urllib.request
import pulsar

HEADROOM_GB = float(os.environ.get("HEADROOM_GB", "1.5"))
FREE_AT_S = float(os.environ.get("FREE_AT_S", "40"))
RUN_S = float(os.environ.get("RUN_S", "75"))

def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p

def gauges(web):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{web}/metrics", timeout=5) as r:
            t = r.read().decode()
    except Exception as e:
        return f"metrics: {e!r}"
    want = ("bookie_SERVER_STATUS", "quire_bookie_disk_usage_ratio", "quire_bookie_disk_full")
    return " ".join(l for l in t.splitlines() if l.split(" ")[0] in want)

def main():
    binary, work = sys.argv[1], sys.argv[2]
    os.makedirs(work, exist_ok=True)
    filler = os.path.join(work, "filler")
    st = os.statvfs(work)
    total, avail = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    mark_avail = 0.05 * total  # available bytes at the 95 % mark
    fill = int(avail - mark_avail - HEADROOM_GB * 2**30)
    print(f"total {total/2**30:.1f} GiB, available {avail/2**30:.1f}, at the mark {mark_avail/2**30:.1f}; "
          f"filler {fill/2**30:.1f} GiB", flush=True)
    subprocess.run(["fallocate", "-l", str(fill), filler], check=True)
    port, web = free_port(), free_port()
    log = open(os.path.join(work, "server.log"), "w")
    srv = subprocess.Popen([binary, "standalone", "--data-dir", os.path.join(work, "data"),
                            f"--brokerServicePort={port}", f"--webServicePort={web}",
                            "--bindAddress=127.0.0.1", "--advertisedAddress=127.0.0.1"],
                           stdout=log, stderr=subprocess.STDOUT)
    try:
        time.sleep(1)
        client = pulsar.Client(f"pulsar://127.0.0.1:{port}", operation_timeout_seconds=5)
        topic = "persistent://public/default/diskfull"
        consumer = client.subscribe(topic, "s")  # keeps the backlog: nothing is trimmed
        counts = {"ok": 0, "fail": 0}
        stop = threading.Event()

        def produce():
            payload = b"x" * 65536
            producer = None
            while not stop.is_set():
                try:
                    if producer is None:
                        producer = client.create_producer(topic, batching_enabled=False,
                                                          send_timeout_millis=3000)
                    producer.send(payload)
                    counts["ok"] += 1
                except Exception:
                    counts["fail"] += 1
                    producer = None if producer is None else producer
                    time.sleep(0.2)

        th = threading.Thread(target=produce, daemon=True)
        th.start()
        t0 = time.monotonic()
        freed = False
        last = dict(counts)
        while time.monotonic() - t0 < RUN_S:
            time.sleep(1)
            el = time.monotonic() - t0
            if not freed and el >= FREE_AT_S:
                os.unlink(filler)
                freed = True
                print(f"{el:5.1f} s: filler removed", flush=True)
            now = dict(counts)
            print(f"{el:5.1f} s: acked {now['ok'] - last['ok']:5d} failed {now['fail'] - last['fail']:3d}  "
                  f"{gauges(web)}", flush=True)
            last = now
        stop.set()
        th.join(10)
        print(f"total acked {counts['ok']}, failed {counts['fail']}", flush=True)
        n = 0
        while True:
            try:
                m = consumer.receive(timeout_millis=2000)
            except pulsar.Timeout:
                break
            consumer.acknowledge(m)
            n += 1
        print(f"received {n} of {counts['ok']} acknowledged", flush=True)
        client.close()
    finally:
        srv.terminate()
        srv.wait(30)
        if os.path.exists(filler):
            os.unlink(filler)
        subprocess.run(["rm", "-rf", os.path.join(work, "data")])

main()
