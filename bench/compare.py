#!/usr/bin/env python3
"""Quire vs Apache Pulsar with the same load generator (quire-perf).

Starts `quire standalone` (journalSyncData=true) and Apache Pulsar 4.x standalone
(bench/pulsar/run-standalone.sh with bench/pulsar/bench-fsync.conf.in, i.e.
journalSyncData=true; then, if asked, bench-nofsync.conf.in, Pulsar's usual
journalSyncData=false) on free 127.0.0.1 ports, runs each scenario against each server
in alternation (the idle server is SIGSTOPped meanwhile, so it takes no CPU from the
measured one), samples the measured server's RSS and CPU (and, for Quire, the mean
journal fdatasync and direct-log write+sync during the run, from /metrics: what the
disk took; and for scenarios a-e and (f)'s catch-up the median p99 over the 1-s windows
of Quire's latency summaries, srv_*_p99_ms: the broker's part of a publish, the bookie's
add, the direct-log write+sync, the journal's fdatasync; the page cache is written back
before each measured run, --no-settle: not),
and prints one table: each
scenario's medians for both servers and their ratio. Raw JSON of every run, the table
(summary.md, results.json) and a latency-percentile plot per scenario (PNG) go to --out.

Scenarios (see docs/performance.md):
  a  1 KiB, batching 1 ms, 1 topic, max rate            b  100 B, batching, max rate
  c  1 KiB at a fixed 50,000 msg/s (latency)            d  unbatched, 1 in flight (floor)
  e  100 topics x 10 producers, keyed, Key_Shared       f  catch-up of a backlog while publishing
  g  many topics, each with a producer, a subscription and one message; then idle
  u  10 topics, unbatched 1 KiB at a fixed 20,000 msg/s (every message an entry of
     its own: the bookie's small-entry path; not one of issue 6's scenarios)
  start  time from exec to the broker port accepting, empty data dir (Quire)
  xcheck pulsar-perf (Java) vs quire-perf, same produce load, both servers

Every wait is bounded; every server this script starts is stopped by it (also on error).
Usage: bench/compare.py [--build build-bench] [--scenarios abcde,start,xcheck] [--reps 3]
"""
import argparse, json, os, shutil, signal, socket, statistics, subprocess, sys, tempfile
import threading, time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PULSAR_DIR = os.path.join(ROOT, "bench", "pulsar")
PCTS = ["p50", "p95", "p99", "p99.9", "p99.99", "max"]
CLK = os.sysconf("SC_CLK_TCK")
QUIRE_EXTRA_ARGS = []  # --quire-arg


def log(*a):
    print("[compare %s]" % time.strftime("%H:%M:%S"), *a, file=sys.stderr, flush=True)


def free_ports(n):
    socks = []
    for _ in range(n):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        socks.append(s)
    ports = [s.getsockname()[1] for s in socks]
    for s in socks:
        s.close()
    return ports


def port_accepts(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


def proc_rss_mb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def proc_cpu_s(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / CLK  # utime + stime
    except OSError:
        return 0.0


class Sampler:
    """Samples a server's RSS every 0.25 s; CPU seconds over the whole window."""

    def __init__(self, pid):
        self.pid, self.max_rss, self.stop_ev = pid, 0.0, threading.Event()
        self.cpu0, self.t0 = proc_cpu_s(pid), time.monotonic()
        self.th = threading.Thread(target=self.loop, daemon=True)
        self.th.start()

    def loop(self):
        while not self.stop_ev.is_set():
            self.max_rss = max(self.max_rss, proc_rss_mb(self.pid))
            self.stop_ev.wait(0.25)

    def stop(self):
        self.stop_ev.set()
        self.th.join(2)
        self.max_rss = max(self.max_rss, proc_rss_mb(self.pid))
        wall = time.monotonic() - self.t0
        return {"server_rss_max_mb": round(self.max_rss, 1),
                "server_cpu_pct": round(100.0 * (proc_cpu_s(self.pid) - self.cpu0) / wall, 1)}


LATENCY_SUMMARIES = {  # Quire's /metrics summaries, read per 1-s window (srv_*_p99_ms)
    "pulsar_broker_publish_latency": "srv_publish",  # a SEND to its durable append
    "bookie_journal_JOURNAL_ADD_ENTRY": "srv_add",    # the bookie's add, submitted to durable
    "quire_bookie_direct_sync_latency": "srv_direct",  # a group's direct-log write + sync
    "bookie_journal_JOURNAL_SYNC": "srv_jsync",       # the journal's fdatasync
    # an add's three parts (srv_add = srv_queue + srv_group + srv_cb, add by add)
    "bookie_journal_JOURNAL_QUEUE_LATENCY": "srv_queue",  # waiting for the journal thread
    "quire_bookie_journal_group_latency": "srv_group",    # its group's forming, writes, syncs
    "quire_bookie_add_callback_latency": "srv_cb",        # back to the loop thread
    "bookie_journal_JOURNAL_CREATION_LATENCY": "srv_jroll",  # a roll to a new journal file
    "quire_bookie_direct_log_roll_latency": "srv_droll",  # a roll to a new direct log
    "quire_broker_loop_iteration_latency": "srv_loop",  # one event-loop iteration, poll to poll
}


class LatencyWindows:
    """Quire only: reads /metrics every second from `delay` s on, while a phase runs; Quire
    is started with --statsUpdateFrequencyInSecs=1, so each read shows the latency summaries'
    quantiles over the last whole second. stop() gives, per summary, the median and the
    largest of the windows' p99s and the largest of their maxima, and the maxima of every
    summary in the window whose slowest add was the slowest (srv_worst). Says which part of
    the server a publish's time went to, window by window (docs/performance.md, sessions 34
    and 43). The windows kept: given the client's measured period ((a)-(e): period(), from
    its report), those read from 2 s after its start (a window read at t ended after
    t - 1 s, so none reaches back into the warm-up) to 1.5 s after its end, with one read
    made after end + 1 s, so that the window holding the period's last moment is among them
    (session 46; before, windows read after the end were dropped, and a stall in the last
    second was the client's alone in the table); else all but the first (it may end before
    the phase began), which in (a)-(e) could reach back into the warm-up (session 44's
    `c12`)."""

    def __init__(self, srv, delay=0.0):
        self.srv, self.delay, self.rows = srv, delay, []
        self.stop_ev = threading.Event()
        self.th = None
        if srv.kind == "quire":
            self.th = threading.Thread(target=self.loop, daemon=True)
            self.th.start()

    def read(self):
        import urllib.request
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % self.srv.wport,
                                        timeout=5) as r:
                text = r.read().decode()
        except Exception:
            return None
        row = {}
        for line in text.splitlines():
            if 'quantile="0.99"' in line:
                suffix = ""
            elif 'quantile="1.0"' in line:
                suffix = "_max"
            else:
                continue
            name = line.split("{")[0]
            if name in LATENCY_SUMMARIES:
                try:
                    row[LATENCY_SUMMARIES[name] + suffix] = float(line.rsplit(" ", 1)[1])
                except ValueError:
                    pass
        return row

    def loop(self):
        if self.stop_ev.wait(self.delay):
            return
        last = None
        while not self.stop_ev.is_set():
            row = self.read()
            if row is not None and row != last:
                self.rows.append((time.time(), row))
                last = row
            self.stop_ev.wait(1.0)

    def stop(self, period=None):
        if not self.th:
            return {}
        if period:  # the server's window that holds the period's end: complete, then read
            wait = period[1] + 1.05 - time.time()
            if 0 < wait <= 2.0:
                time.sleep(wait)
        self.stop_ev.set()
        self.th.join(10)
        if period:
            row = self.read()
            if row is not None and (not self.rows or row != self.rows[-1][1]):
                self.rows.append((time.time(), row))
        out = {}
        rows = [r for _, r in self.rows[1:]]
        if period:
            inside = [r for t, r in self.rows if period[0] + 2.0 <= t <= period[1] + 1.5]
            if inside:
                rows = inside
                out["srv_windows_aligned"] = 1
        has = lambda r, k: r.get(k) is not None and r[k] == r[k]  # present, not NaN
        for key in LATENCY_SUMMARIES.values():
            vals = [r[key] for r in rows if has(r, key)]
            if vals:
                out[key + "_p99_ms"] = round(med(vals), 3)
                out[key + "_p99_max_ms"] = round(max(vals), 3)
            maxes = [r[key + "_max"] for r in rows if has(r, key + "_max")]
            if maxes:
                out[key + "_max_ms"] = round(max(maxes), 3)
        worst = [r for r in rows if has(r, "srv_add_max")]
        if worst:
            w = max(worst, key=lambda r: r["srv_add_max"])
            out["srv_worst"] = {k[:-4]: w[k] for k in sorted(w) if k.endswith("_max") and has(w, k)}
        out["srv_windows"] = max(0, len(rows))
        return out


def worst_window(f):
    """Quire: the maxima of the 1-s window whose slowest add was the slowest (srv_worst),
    as one line's tail; "" without them."""
    w = f.get("srv_worst")
    if not w:
        return ""
    parts = ", ".join("%s %s" % (k, fmt(w[k])) for k in
                      ("srv_queue", "srv_group", "srv_cb", "srv_direct", "srv_jsync", "srv_jroll",
                       "srv_droll", "srv_loop")
                      if k in w)
    return "; worst window max: add %s (%s)" % (fmt(w.get("srv_add")), parts)


def client_late(f):
    """The load generator's own lateness (its timers fired late: its loop busy, or the
    process or the VM held) and the host witness's (a thread that only sleeps: the
    machine held), as one line's tail; "" without them."""
    out = ""
    if f.get("client_late_max_ms") is not None:
        out += "; client timers late p99 %s max %s ms" % (fmt(f.get("client_late_p99_ms")),
                                                          fmt(f.get("client_late_max_ms")))
    if f.get("witness_max_ms") is not None:
        out += "; witness late p99 %s max %s ms" % (fmt(f.get("witness_p99_ms")),
                                                    fmt(f.get("witness_max_ms")))
    return out


# ---------------------------------------------------------------- servers

class Quire:
    kind = "quire"
    # not a scenario parameter: --quire-arg, to try a server setting (e.g. a read size)

    def __init__(self, build, workdir, label="quire"):
        self.bin = os.path.join(build, "src", "quire")
        self.workdir, self.label, self.proc = workdir, label, None

    def start(self):
        self.data = tempfile.mkdtemp(prefix="quire-data.", dir=self.workdir)
        self.port, self.wport = free_ports(2)
        self.logf = open(os.path.join(self.workdir, "%s.log" % self.label), "ab")
        t0 = time.monotonic()
        self.proc = subprocess.Popen(
            [self.bin, "standalone", "--data-dir", self.data, "--bindAddress=127.0.0.1",
             "--advertisedAddress=127.0.0.1", "--brokerServicePort=%d" % self.port,
             "--webServicePort=%d" % self.wport, "--journalSyncData=true", "--logLevel=warn",
             "--statsUpdateFrequencyInSecs=1"]  # LatencyWindows
            + QUIRE_EXTRA_ARGS,
            stdout=self.logf, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
            start_new_session=True)  # see ORPHANED below
        # ready: the broker port and the web service (admin API, /metrics) both
        # accept; the broker's port opens first
        while not (port_accepts(self.port) and port_accepts(self.wport)):
            if self.proc.poll() is not None or time.monotonic() - t0 > 30:
                raise RuntimeError("quire did not start (see %s.log)" % self.label)
            time.sleep(0.0005)
        self.ready_ms = (time.monotonic() - t0) * 1000
        self.url = "pulsar://127.0.0.1:%d" % self.port
        return self

    @property
    def pid(self):
        return self.proc.pid

    def stop(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.proc.pid, signal.SIGCONT)
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self.proc = None
        shutil.rmtree(self.data, ignore_errors=True)


class Pulsar:
    kind = "pulsar"

    def __init__(self, workdir, conf, label, mem):
        self.workdir, self.conf, self.label, self.mem = workdir, conf, label, mem
        self.pid_ = None

    def start(self):
        run = tempfile.mkdtemp(prefix="%s." % self.label, dir=self.workdir)
        self.run = run
        env = dict(os.environ, PULSAR_CONF_IN=os.path.join(PULSAR_DIR, self.conf),
                   PULSAR_JVM_MEM=self.mem, PULSAR_START_TIMEOUT="240")
        t0 = time.monotonic()
        out = subprocess.run([os.path.join(PULSAR_DIR, "run-standalone.sh"), run], env=env,
                             capture_output=True, text=True, timeout=400,
                             start_new_session=True)  # see ORPHANED below
        if out.returncode != 0:
            raise RuntimeError("pulsar did not start: " + out.stderr[-2000:])
        self.ready_ms = (time.monotonic() - t0) * 1000
        vals = dict(l.replace("export ", "").split("=", 1) for l in out.stdout.split("\n") if "=" in l)
        self.url, self.pid_ = vals["PULSAR_SERVICE_URL"], int(vals["PULSAR_PID"])
        return self

    @property
    def pid(self):
        return self.pid_

    def stop(self):
        if self.pid_:
            try:
                os.kill(self.pid_, signal.SIGCONT)
                os.kill(self.pid_, signal.SIGTERM)
                for _ in range(300):
                    os.kill(self.pid_, 0)
                    time.sleep(0.1)
                os.kill(self.pid_, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.pid_ = None
        keep_log_tail(os.path.join(self.run, "pulsar.log"),
                      os.path.join(self.workdir, "%s.log" % self.label))
        shutil.rmtree(self.run, ignore_errors=True)


def keep_log_tail(src, dst, limit=4 << 20):
    """Copies the last `limit` bytes of src to dst (the results keep the servers' logs)."""
    try:
        with open(src, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - limit))
            data = f.read()
        with open(dst, "ab") as f:
            f.write(data)
    except OSError:
        pass


# ORPHANED: the servers run in sessions of their own. freeze() stops them in
# turn, and a process group that loses its last link to its session's other
# groups while one of its processes is stopped gets SIGHUP (POSIX orphaned
# process groups): in compare.py's own group, a server stopped at the moment
# the shell that started compare.py exited (compare.py run in the background)
# died without a word (session 32: twice).
def freeze(servers, active):
    """SIGSTOP every server but `active` (SIGCONT it)."""
    for s in servers:
        if s.pid:
            os.kill(s.pid, signal.SIGCONT if s is active else signal.SIGSTOP)
    time.sleep(0.3)


# ---------------------------------------------------------------- quire-perf

class Perf:
    def __init__(self, build, outdir):
        self.bin = os.path.join(build, "tools", "quire-perf")
        self.outdir, self.n = outdir, 0
        # The host witness (a thread that only sleeps 1 ms at a time) in the measured
        # runs, when this build's quire-perf has it (an older build compared has not).
        usage = subprocess.run([self.bin, "--help"], capture_output=True, text=True, timeout=30)
        self.witness = ["--host-witness"] if "--host-witness" in usage.stdout else []

    def start(self, mode, url, args, name):
        self.n += 1
        base = os.path.join(self.outdir, "%03d-%s" % (self.n, name))
        cmd = [self.bin, mode, "--service-url", url, "--json", base + ".json",
               "--report-interval-s", "5", "--op-timeout-s", "60"] + [str(a) for a in args]
        with open(base + ".cmd", "w") as f:
            f.write(" ".join(cmd) + "\n")
        p = subprocess.Popen(cmd, stdout=open(base + ".out", "w"), stderr=subprocess.STDOUT)
        p.base = base
        return p

    @staticmethod
    def finish(p, timeout):
        try:
            p.wait(timeout)
        except subprocess.TimeoutExpired:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        try:
            with open(p.base + ".json") as f:
                r = json.load(f)
        except (OSError, ValueError):
            r = {}
        r["exit_status"] = p.returncode
        if p.returncode != 0:
            log("quire-perf %s exited %s; see %s.out" % (os.path.basename(p.base), p.returncode, p.base))
        return r

    def run(self, mode, url, args, name, timeout):
        return self.finish(self.start(mode, url, args, name), timeout)


def lateness(r, prefix=""):
    """p99 and max of the load generator's own lateness (client_late: its pace and batch
    timers fired late) and of the host witness's (witness: a thread that only sleeps, the
    machine held) from one quire-perf JSON report; none when it recorded none."""
    out = {}
    for key, name in (("timer_lateness_ms", "client_late"), ("witness_lateness_ms", "witness")):
        h = r.get(key) or {}
        if h.get("count"):
            out[prefix + name + "_p99_ms"], out[prefix + name + "_max_ms"] = h["p99"], h["max"]
    return out


def period(r):
    """The measured period of one quire-perf JSON report, (start, end) in wall-clock
    seconds, or None (an older quire-perf, or a failed run)."""
    end, d = r.get("measured_end_unix_s"), r.get("duration_s")
    return (end - d, end) if end and d else None


def flat(r):
    """The figures of one quire-perf JSON report that go in the table."""
    out = {}
    if not r or "produced_msgs" not in r:
        return {"ok": 0}
    if r["exit_status"] != 0:  # a failed run is not a figure
        return {"ok": 0, "exit_status": r["exit_status"]}
    for k in ("produce_msg_per_s", "produce_mb_per_s", "consume_msg_per_s", "consume_mb_per_s"):
        out[k] = r[k]
    for side, key in (("pub", "publish_latency_ms"), ("e2e", "end_to_end_latency_ms")):
        h = r[key]
        if h["count"]:
            for p in PCTS:
                out["%s_%s_ms" % (side, p)] = h[p]
    out.update(lateness(r))
    out["ok"] = int(r["exit_status"] == 0 and r["send_errors"] == 0 and r["checksum_errors"] == 0)
    return out


# ---------------------------------------------------------------- scenarios

E_BATCHER = ["key-based"]  # (e)'s batcher: --e-batcher


def scen_args(sc, tag, secs, warm):
    common = ["--seconds", secs, "--warmup-seconds", warm]
    if sc == "a":
        return ["--topics", "a-" + tag, "--size", 1024, "--rate", 0, "--batch-max-delay-ms", 1,
                "--max-pending", 10000, "--receiver-queue-size", 10000] + common
    if sc == "b":
        return ["--topics", "b-" + tag, "--size", 100, "--rate", 0, "--batch-max-delay-ms", 1,
                "--max-pending", 50000, "--receiver-queue-size", 50000] + common
    if sc == "c":
        return ["--topics", "c-" + tag, "--size", 1024, "--rate", 50000, "--batch-max-delay-ms", 1,
                "--max-pending", 10000, "--receiver-queue-size", 10000] + common
    if sc == "d":
        return ["--topics", "d-" + tag, "--size", 1024, "--rate", 0, "--disable-batching",
                "--max-pending", 1] + common
    if sc == "e":
        return ["--topic-prefix", "e-" + tag, "--num-topics", 100, "--producers-per-topic", 10,
                "--consumers-per-topic", 2, "--subscription-type", "Key_Shared", "--keys", 1000,
                "--batcher", E_BATCHER[0], "--size", 1024, "--rate", 0, "--max-pending", 200, "--receiver-queue-size", 1000] + common
    if sc == "u":
        return ["--topic-prefix", "u-" + tag, "--num-topics", 10, "--size", 1024, "--rate", 20000,
                "--disable-batching", "--max-pending", 1000, "--receiver-queue-size", 1000] + common
    raise ValueError(sc)


SYNC_METRICS = {  # Quire's /metrics: what the disk's syncs took (counts, time in ms)
    "bookie_journal_JOURNAL_SYNC_count": ("journal_syncs", 1),
    "bookie_journal_JOURNAL_SYNC_sum": ("journal_sync_ms", 1),
    "quire_bookie_direct_syncs_total": ("direct_syncs", 1),
    "quire_bookie_direct_sync_seconds_total": ("direct_sync_ms", 1000),
    # and what the bookie's garbage collection did meanwhile (an earlier run's garbage)
    "quire_bookie_gc_logs_removed_total": ("gc_logs_removed", 1),
    "quire_bookie_gc_compacted_bytes_total": ("gc_compacted_mb", 1e-6),
}


def disk_syncs(srv):
    """The bookie's sync counters from Quire's /metrics (None for Pulsar or on error)."""
    if srv.kind != "quire":
        return None
    try:
        import urllib.request
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % srv.wport, timeout=30) as r:
            text = r.read().decode()
    except Exception as e:
        log("metrics of %s: %r" % (srv.label, e))
        return None
    out = {}
    for line in text.splitlines():
        name = line.split("{")[0].split(" ")[0]
        if name in SYNC_METRICS:
            key, scale = SYNC_METRICS[name]
            out[key] = float(line.rsplit(" ", 1)[1]) * scale
    return out if len(out) == len(SYNC_METRICS) else None


def sync_means(before, after):
    """Mean journal fdatasync and direct-log write+sync (ms) between two disk_syncs()."""
    if not before or not after:
        return {}
    out = {}
    for kind in ("journal", "direct"):
        n = after[kind + "_syncs"] - before[kind + "_syncs"]
        ms = after[kind + "_sync_ms"] - before[kind + "_sync_ms"]
        out[kind + "_sync_mean_ms"] = round(ms / n, 3) if n > 0 else None
    for key in ("gc_logs_removed", "gc_compacted_mb"):
        out[key] = round(after[key] - before[key], 1)
    return out


def page_cache():
    """The kernel's dirty and under-writeback page cache (MB) and pages written so far."""
    out = {}
    try:
        for line in open("/proc/meminfo"):
            k, v = line.split(":", 1)
            if k in ("Dirty", "Writeback", "MemFree"):
                out[k] = int(v.split()[0]) / 1024.0
        dev = os.stat(os.environ.get("BENCH_TMP", "/tmp")).st_dev
        for line in open("/proc/diskstats"):  # the device (whole disk) under the data
            f = line.split()
            if (int(f[0]), int(f[1])) in ((os.major(dev), os.minor(dev)), (os.major(dev), 0)) \
                    and "writes" not in out:
                # fields from 4.18 on: discards completed at [14]; flushes at [18] (5.5)
                out["writes"], out["write_ms"], out["discards"] = int(f[7]), int(f[10]), int(f[14])
                out["flushes"] = int(f[18]) if len(f) > 18 else 0
                out["reads"], out["read_sectors"] = int(f[3]), int(f[5])
        for line in open("/proc/vmstat"):
            k, v = line.split()
            if k == "nr_written":
                out[k] = int(v)
    except (OSError, ValueError):
        return None
    return out if len(out) == 10 else None


def writeback_figures(before, after):
    """What the kernel had to write when a run started and wrote during it: another
    run's, or the other server's, dirty pages compete with the measured run's syncs."""
    if not before or not after:
        return {}
    return {"dirty_mb_at_start": round(before["Dirty"] + before["Writeback"], 1),
            "free_mb_at_start": round(before["MemFree"]),
            "kernel_written_mb": round((after["nr_written"] - before["nr_written"]) * 4096 / 1e6, 1),
            # the device's own view: writes and flushes completed, a write's mean time
            "disk_writes": after["writes"] - before["writes"],
            "disk_flushes": after["flushes"] - before["flushes"],
            "disk_discards": after["discards"] - before["discards"],
            # reads the device served (not the page cache): a reader behind what is cached
            "disk_reads": after["reads"] - before["reads"],
            "disk_read_mb": round((after["read_sectors"] - before["read_sectors"]) * 512 / 1e6, 1),
            "disk_write_ms_mean": round((after["write_ms"] - before["write_ms"]) /
                                        max(1, after["writes"] - before["writes"]), 3)}


SETTLE = [True]


def settle():
    """Before a measured run: write back every dirty page (the other server's, an earlier
    run's) so that the kernel's writeback does not land on this run's syncs at a random
    moment (dirty pages wait up to 30 s before the kernel writes them). Both servers get
    it. Returns the seconds it took."""
    if not SETTLE[0]:
        return None
    t0 = time.monotonic()
    os.sync()
    deadline = t0 + 30
    while time.monotonic() < deadline:
        pc = page_cache()
        if not pc or pc["Dirty"] + pc["Writeback"] < 16:
            break
        time.sleep(0.1)
    return round(time.monotonic() - t0, 2)


def run_simple(sc, srv, perf, tag, secs, warm, servers, freeze_on):
    if freeze_on:
        freeze(servers, srv)
    settled = settle()
    syncs, pc = disk_syncs(srv), page_cache()
    smp = Sampler(srv.pid)
    lw = LatencyWindows(srv, warm + 0.5)
    r = perf.run("both", srv.url, scen_args(sc, tag, secs, warm) + perf.witness,
                 "%s-%s" % (sc, srv.label), secs + warm + 180)
    f = flat(r)
    f.update(smp.stop())
    f.update(lw.stop(period(r)))
    f.update(sync_means(syncs, disk_syncs(srv)))
    f.update(writeback_figures(pc, page_cache()))
    f["settle_s"] = settled
    return f


def run_backlog(srv, perf, tag, mb, rate, servers, freeze_on):
    """(f): a subscription; `mb` MB of 1 KiB messages behind it; then a consumer reads
    them from the start while a producer keeps publishing 1 KiB at `rate` msg/s."""
    if freeze_on:
        freeze(servers, srv)
    topic, n = "f-" + tag, int(mb * 1e6 / 1024)
    sub = ["--topics", topic, "--subscription", "catchup"]
    perf.run("consume", srv.url, sub + ["--seconds", 1, "--warmup-seconds", 0,
             "--subscription-position", "Earliest"], "f-sub-" + srv.label, 90)
    t0 = time.monotonic()
    fill = perf.run("produce", srv.url, ["--topics", topic, "--size", 1024, "--rate", 0,
                    "--max-pending", 10000, "--messages", n, "--warmup-seconds", 0],
                    "f-fill-" + srv.label, 1800)
    fill_s = time.monotonic() - t0
    settled = settle()  # the fill's own dirty pages too: the live phase is what is timed
    syncs, pc = disk_syncs(srv), page_cache()
    smp = Sampler(srv.pid)
    live = perf.start("produce", srv.url, ["--topics", topic, "--size", 1024, "--rate", rate,
                      "--max-pending", 10000, "--seconds", 900, "--warmup-seconds", 0] + perf.witness,
                      "f-live-" + srv.label)
    time.sleep(1)
    lw = LatencyWindows(srv)
    cons = perf.run("consume", srv.url, sub + ["--messages", n, "--warmup-seconds", 0,
                    "--receiver-queue-size", 10000, "--subscription-position", "Earliest"],
                    "f-catchup-" + srv.label, 1800)
    windows = lw.stop()  # the catch-up's few seconds: every window but the first
    live.send_signal(signal.SIGINT)
    live = perf.finish(live, 60)
    out = {"backlog_mb": round(n * 1024 / 1e6), "fill_mb_per_s": round(n * 1024 / 1e6 / fill_s, 1),
           "catchup_mb_per_s": cons.get("consume_mb_per_s"),
           "catchup_msg_per_s": cons.get("consume_msg_per_s"),
           "live_rate": rate, "live_produce_msg_per_s": live.get("produce_msg_per_s")}
    for p in PCTS:
        out["live_pub_%s_ms" % p] = live.get("publish_latency_ms", {}).get(p)
    out.update(lateness(live, "live_"))
    out["ok"] = int(fill.get("exit_status") == 0 and cons.get("exit_status") == 0)
    out.update(windows)
    out.update(smp.stop())
    out.update(sync_means(syncs, disk_syncs(srv)))
    out.update(writeback_figures(pc, page_cache()))
    out["settle_s"] = settled
    return out


def run_topics(srv, perf, tag, n_topics, parallel, idle_s, servers, freeze_on):
    """(g): n_topics topics, each with a producer, a subscription and one message (in
    quire-perf processes of 1000 topics, `parallel` at a time); then idle_s of idle.
    Each process shares one connection among its producers and consumers, as a Pulsar
    client does (--max-connections 1), so the figure is the broker's, not TCP set-up's."""
    if srv.kind == "quire":  # a fresh Quire, so RSS is that of the topics alone
        srv.stop()
        srv.start()
    if freeze_on:
        freeze(servers, srv)
    rss_before = proc_rss_mb(srv.pid)
    smp = Sampler(srv.pid)
    per = 1000
    groups = [(i, min(per, n_topics - i * per)) for i in range((n_topics + per - 1) // per)]
    t0, fails = time.monotonic(), 0
    running = []
    # `parallel` groups in flight at all times: a group starts as soon as one ends
    # (waves of `parallel` that each waited for their slowest group left the
    # server idle at every wave's tail)
    while groups or running:
        while groups and len(running) < parallel:
            (gi, cnt), groups = groups[0], groups[1:]
            # every producer is due one message within the first millisecond, and
            # sends exactly one (without --messages-per-producer, early producers
            # were due again before the last had sent: under load about half the
            # topics got none and others up to 7, the same total)
            args = ["--topic-prefix", "g-%s-%d" % (tag, gi), "--num-topics", cnt,
                    "--subscription-position", "Earliest", "--rate", cnt * 1000,
                    "--messages", cnt, "--messages-per-producer", 1,
                    "--warmup-seconds", 0, "--disable-batching",
                    "--size", 100, "--report-interval-s", 60, "--max-connections", 1]
            running.append((perf.start("both", srv.url, args, "g-%s" % srv.label),
                            time.monotonic()))
        done = [r for r in running if r[0].poll() is not None or time.monotonic() - r[1] > 600]
        for r in done:
            running.remove(r)
            fails += perf.finish(r[0], 1)["exit_status"] != 0
        if not done:
            time.sleep(0.002)
    create_s = time.monotonic() - t0
    busy = smp.stop()
    rss_loaded = proc_rss_mb(srv.pid)
    time.sleep(5)  # let post-close work settle, then measure idle
    c0, w0 = proc_cpu_s(srv.pid), time.monotonic()
    time.sleep(idle_s)
    idle_cpu = 100.0 * (proc_cpu_s(srv.pid) - c0) / (time.monotonic() - w0)
    return {"topics": n_topics, "create_s": round(create_s, 1),
            "topics_per_s": round(n_topics / create_s), "failed_procs": fails,
            "rss_before_mb": round(rss_before, 1), "rss_peak_mb": busy["server_rss_max_mb"], "rss_after_mb": round(rss_loaded, 1),
            "rss_idle_mb": round(proc_rss_mb(srv.pid), 1), "idle_cpu_pct": round(idle_cpu, 2),
            "ok": int(fails == 0)}


def run_xcheck(srv, perf, tag, rate, secs, servers, freeze_on, tc_dir):
    """pulsar-perf produce vs quire-perf produce, same load (1 KiB, rate, 1 ms batches)."""
    if freeze_on:
        freeze(servers, srv)
    settle()  # as before every scenario: the other server's dirty pages written back first
    q = flat(perf.run("produce", srv.url, ["--topics", "x-q-" + tag, "--size", 1024, "--rate", rate,
                      "--max-pending", 10000, "--seconds", secs, "--warmup-seconds", 5],
                      "x-quireperf-" + srv.label, secs + 120))
    conf = os.path.join(perf.outdir, "empty-client.conf")
    open(conf, "w").close()
    base = os.path.join(perf.outdir, "x-pulsarperf-%s-%s" % (srv.label, tag))
    cmd = ["java", "-Xmx1g", "-cp", os.path.join(tc_dir, "lib", "*"),
           "-Dlog4j2.configurationFile=" + os.path.join(PULSAR_DIR, "log4j2-perf.xml"),
           "org.apache.pulsar.testclient.PulsarPerfTestTool", conf, "produce",
           "-u", srv.url, "-r", str(rate), "-s", "1024", "-b", "1", "-bm", "1000",
           "-o", "10000", "-time", str(secs + 5), "--warmup-time", "5",
           "persistent://public/default/x-p-" + tag]
    with open(base + ".out", "w") as out:
        try:
            subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT, timeout=secs + 180)
        except subprocess.TimeoutExpired:
            log("pulsar-perf timed out")
    pp = parse_pulsar_perf(open(base + ".out").read())
    return {"quire-perf": q, "pulsar-perf": pp}


def parse_pulsar_perf(text):
    """The final 'Aggregated throughput stats' and 'Aggregated latency stats' lines."""
    import re
    out, periodic = {}, []
    for line in text.splitlines():
        m = re.search(r"Throughput produced:\s+[\d,]+ msg ---\s+([\d.,]+) msg/s", line)
        if m:
            periodic.append(float(m.group(1).replace(",", "")))
        if "Aggregated throughput stats" in line:
            m = re.search(r"([\d.,]+) msg/s", line)
            if m:
                out["produce_msg_per_s"] = float(m.group(1).replace(",", ""))
        if "Aggregated latency stats" in line:
            for k, key in (("50pct", "p50"), ("95pct", "p95"), ("99pct", "p99"),
                           ("99.9pct", "p99.9"), ("99.99pct", "p99.99"), ("Max", "max")):
                m = re.search(re.escape(k) + r":\s*([\d.,]+)", line)
                if m:
                    out["pub_%s_ms" % key] = float(m.group(1).replace(",", ""))
    # the aggregated rate divides by the time since start, producer creation
    # included; the 10 s interval lines after the first are the steady rate
    if len(periodic) > 1:
        out["interval_msg_per_s_median"] = statistics.median(periodic[1:])
    return out


def run_start(build, workdir, n):
    out = []
    for _ in range(n):
        q = Quire(build, workdir, "quire-start").start()
        out.append(q.ready_ms)
        q.stop()
    return {"ready_ms_runs": [round(x, 1) for x in out],
            "ready_ms_median": round(statistics.median(out), 1)}


# ---------------------------------------------------------------- report

TABLE_KEYS = {
    "a": ["produce_mb_per_s", "produce_msg_per_s", "consume_mb_per_s", "pub_p50_ms", "pub_p99_ms", "e2e_p99_ms", "server_rss_max_mb", "server_cpu_pct", "journal_sync_mean_ms", "direct_sync_mean_ms"],
    "b": ["produce_msg_per_s", "consume_msg_per_s", "produce_mb_per_s", "pub_p99_ms", "e2e_p99_ms", "server_rss_max_mb", "server_cpu_pct"],
    "c": ["produce_msg_per_s", "pub_p50_ms", "pub_p99_ms", "pub_p99.9_ms", "e2e_p50_ms", "e2e_p99_ms", "e2e_p99.9_ms", "server_rss_max_mb", "server_cpu_pct", "journal_sync_mean_ms", "direct_sync_mean_ms", "srv_publish_p99_ms", "srv_add_p99_ms", "srv_queue_p99_ms", "srv_group_p99_ms", "srv_cb_p99_ms", "srv_direct_p99_ms", "srv_jsync_p99_ms", "srv_add_max_ms", "client_late_max_ms", "witness_max_ms"],
    "d": ["produce_msg_per_s", "pub_p50_ms", "pub_p99_ms", "e2e_p50_ms", "e2e_p99_ms", "server_rss_max_mb", "server_cpu_pct"],
    "e": ["produce_msg_per_s", "consume_msg_per_s", "produce_mb_per_s", "pub_p99_ms", "e2e_p99_ms", "server_rss_max_mb", "server_cpu_pct"],
    "f": ["backlog_mb", "fill_mb_per_s", "catchup_mb_per_s", "live_produce_msg_per_s", "live_pub_p50_ms", "live_pub_p99_ms", "live_pub_p99.9_ms", "server_rss_max_mb", "server_cpu_pct", "journal_sync_mean_ms", "direct_sync_mean_ms", "srv_publish_p99_ms", "srv_add_p99_ms", "srv_queue_p99_ms", "srv_group_p99_ms", "srv_cb_p99_ms", "srv_direct_p99_ms", "srv_jsync_p99_ms", "srv_add_max_ms", "live_client_late_max_ms", "live_witness_max_ms"],
    "u": ["produce_msg_per_s", "pub_p50_ms", "pub_p99_ms", "pub_p99.9_ms", "e2e_p99_ms", "server_rss_max_mb", "server_cpu_pct", "journal_sync_mean_ms"],
    "g": ["topics", "topics_per_s", "rss_before_mb", "rss_peak_mb", "rss_idle_mb", "idle_cpu_pct", "failed_procs"],
}


def med(vals):
    vals = [v for v in vals if isinstance(v, (int, float))]
    return statistics.median(vals) if vals else None


def fmt(v):
    if v is None:
        return "-"
    if abs(v) >= 1000:
        return "{:,.0f}".format(v)
    if abs(v) >= 10:
        return "%.1f" % v
    return "%.3f" % v


def table(results, labels):
    """results[scenario][label] = list of flat dicts (repetitions)."""
    ref = labels[1] if len(labels) > 1 else None
    head = "| scenario | figure | " + " | ".join("%s (median, n)" % l for l in labels)
    head += (" | %s / %s |" % (labels[0], ref)) if ref else " |"
    lines = [head, "|" + "---|" * (len(labels) + 2 + (1 if ref else 0))]
    for sc in sorted(results):
        for key in TABLE_KEYS.get(sc, []):
            cells, vals = [], []
            for l in labels:
                runs = results[sc].get(l, [])
                v = med([r.get(key) for r in runs])
                vals.append(v)
                cells.append("%s (%d)" % (fmt(v), len([r for r in runs if r.get(key) is not None])) if runs else "-")
            ratio = "-"
            if ref and vals[0] is not None and vals[1]:
                ratio = "%.2fx" % (vals[0] / vals[1])
            lines.append("| %s | %s | %s |%s" % (sc, key, " | ".join(cells), (" %s |" % ratio) if ref else ""))
    return "\n".join(lines)


def plot(results, labels, outdir):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        log("matplotlib not installed (pip install matplotlib): no plots")
        return []
    nines = {"p50": 2, "p95": 20, "p99": 100, "p99.9": 1000, "p99.99": 10000, "max": 100000}
    files = []
    for sc in sorted(results):
        if sc in ("f", "g"):
            pre = [("live_pub", "publish (live producer)")] if sc == "f" else []
        else:
            pre = [("pub", "publish"), ("e2e", "end-to-end")]
        if not pre:
            continue
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for l in labels:
            runs = results[sc].get(l, [])
            for side, name in pre:
                ys = [med([r.get("%s_%s_ms" % (side, p)) for r in runs]) for p in PCTS]
                xs = [nines[p] for p, y in zip(PCTS, ys) if y]
                ys = [y for y in ys if y]
                if ys:
                    ax.plot(xs, ys, marker="o", linestyle="-" if side != "e2e" else "--",
                            label="%s %s" % (l, name))
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xticks(list(nines.values()))
        ax.set_xticklabels(list(nines.keys()))
        ax.set_xlabel("percentile")
        ax.set_ylabel("latency (ms)")
        ax.set_title("scenario (%s): latency percentiles (medians of runs)" % sc)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
        fn = os.path.join(outdir, "latency-%s.png" % sc)
        fig.tight_layout()
        fig.savefig(fn, dpi=90)
        plt.close(fig)
        files.append(fn)
    return files


# ---------------------------------------------------------------- main

def pulsar_cfgs_of(a):
    return [c for c in a.pulsar.split(",") if c in ("fsync", "nofsync")]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--scenarios", default="abcde", help="letters a-g (and u); 'start' and 'xcheck' too, comma-separated")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--pulsar", default="fsync,nofsync", help="Pulsar configurations: fsync, nofsync, none")
    ap.add_argument("--pulsar-mem", default="-Xms2g -Xmx2g -XX:MaxDirectMemorySize=4g")
    ap.add_argument("--backlog-mb", type=float, default=2000)
    ap.add_argument("--backlog-mb-pulsar", type=float, default=None)
    ap.add_argument("--live-rate", type=int, default=50000)
    ap.add_argument("--topics-quire", type=int, default=100000)
    ap.add_argument("--topics-pulsar", type=int, default=2000)
    ap.add_argument("--topics-parallel", type=int, default=1)
    ap.add_argument("--idle-s", type=int, default=30)
    ap.add_argument("--xcheck-rate", type=int, default=20000)
    ap.add_argument("--xcheck-seconds", type=int, default=30)
    ap.add_argument("--quire-arg", action="append", default=[],
                    help="extra quire standalone argument, e.g. --quire-arg=--dispatcherMaxReadSizeBytes=1048576")
    ap.add_argument("--e-batcher", default="key-based", choices=["key-based", "default"],
                    help="(e)'s batcher: key-based (one key per batch, as Key_Shared wants) or "
                         "default (batches of mixed keys, each to one consumer)")
    ap.add_argument("--no-freeze", action="store_true", help="do not SIGSTOP the idle server")
    ap.add_argument("--no-settle", action="store_true",
                    help="do not sync the page cache before each measured run (a, b, c, d, e, f live)")
    ap.add_argument("--out", default=os.path.join(ROOT, "bench", "results", time.strftime("%Y%m%d-%H%M%S")))
    ap.add_argument("--report-only", metavar="RESULTS_JSON",
                    help="no runs: print the table and draw the plots of an earlier results.json (into its folder)")
    a = ap.parse_args()
    QUIRE_EXTRA_ARGS.extend(a.quire_arg)
    E_BATCHER[0] = a.e_batcher
    if a.report_only:
        d = json.load(open(a.report_only))
        labels = ["quire"] + ["pulsar-" + c for c in d["args"]["pulsar"].split(",") if c in ("fsync", "nofsync")]
        outdir = os.path.dirname(os.path.abspath(a.report_only))
        tab = table(d["results"], labels)
        pngs = plot(d["results"], labels, outdir)
        with open(os.path.join(outdir, "summary.md"), "w") as f:
            f.write(tab + "\n\n```\n" + json.dumps(d["extra"], indent=1) + "\n```\n")
        print(tab)
        print(json.dumps(d["extra"], indent=1))
        for p in pngs:
            print("plot:", os.path.relpath(p, ROOT))
        return
    tokens = [t for t in a.scenarios.split(",") if t]
    letters = sorted(set("".join(t for t in tokens if t not in ("start", "xcheck"))))
    os.makedirs(a.out, exist_ok=True)
    raw = os.path.join(a.out, "raw")
    os.makedirs(raw, exist_ok=True)
    workdir = tempfile.mkdtemp(prefix="quire-bench.", dir=os.environ.get("BENCH_TMP", "/tmp"))
    # Both servers keep what (a) and (b) write until their ledgers roll: a run with
    # --reps 2 of every scenario wrote 48 GB (docs/performance.md). A full disk makes
    # the bookies refuse writes and the figures meaningless, so say it before.
    free_gb = shutil.disk_usage(workdir).free / 1e9
    want_gb = 24.0 * a.reps * (len(pulsar_cfgs_of(a)) + 1) / 2 if set(letters) & set("abef") else 4.0
    if free_gb < want_gb:
        log("warning: %.1f GB free under %s; this run may write about %.0f GB (BENCH_TMP "
            "chooses the directory)" % (free_gb, workdir, want_gb))
    # The bookie counts a disk used as (total - available) / total, and from 90 % on
    # (diskUsageWarnThreshold) runs GC at every check; from 95 % it refuses adds.
    du = shutil.disk_usage(workdir)
    used_pct = 100.0 * (du.total - du.free) / du.total if du.total else 0.0
    if used_pct + 100.0 * want_gb * 1e9 / max(du.total, 1) >= 90.0:
        log("warning: the disk under %s is %.1f %% used as the bookie counts it (total minus "
            "available); with this run's writes it may pass the bookie's 90 %% "
            "diskUsageWarnThreshold" % (workdir, used_pct))
    perf = Perf(a.build, raw)
    results, extra = {}, {}
    extra["disk_used_pct_at_start"] = round(used_pct, 1)
    pulsar_cfgs = [c for c in a.pulsar.split(",") if c in ("fsync", "nofsync")]
    labels = ["quire"] + ["pulsar-" + c for c in pulsar_cfgs]
    servers = []
    freeze_on = not a.no_freeze
    SETTLE[0] = not a.no_settle

    def save():
        with open(os.path.join(a.out, "results.json"), "w") as f:
            json.dump({"args": vars(a), "results": results, "extra": extra}, f, indent=1)

    try:
        if "start" in tokens:
            extra["quire_start"] = run_start(a.build, workdir, 5)
            log("quire start:", extra["quire_start"])
        quire = Quire(a.build, workdir).start()
        servers.append(quire)
        log("quire up on %s in %.1f ms" % (quire.url, quire.ready_ms))
        for ci, cfg in enumerate(pulsar_cfgs or [None]):
            pul = None
            if cfg:
                conf = "bench-fsync.conf.in" if cfg == "fsync" else "bench-nofsync.conf.in"
                pul = Pulsar(workdir, conf, "pulsar-" + cfg, a.pulsar_mem)
                if freeze_on:
                    freeze(servers, None)
                pul.start()
                servers.append(pul)
                extra.setdefault("pulsar_start_ms", {})[pul.label] = round(pul.ready_ms)
                log("%s up on %s in %.0f ms (pid %d)" % (pul.label, pul.url, pul.ready_ms, pul.pid))
                warm = perf.run("both", pul.url, scen_args("a", "jit", 10, 5), "jit-warmup-" + pul.label, 200)
                log("%s JIT warm-up run: %s msg/s" % (pul.label, warm.get("produce_msg_per_s")))
            # Quire's runs alternate with the first Pulsar configuration only.
            targets = ([quire] if ci == 0 else []) + ([pul] if pul else [])
            for rep in range(a.reps):
                for sc in letters:
                    if sc in "abcdeu":
                        for srv in targets:
                            tag = "%s%d%d" % (srv.label[0] + (cfg or "")[:2], ci, rep)
                            f = run_simple(sc, srv, perf, tag, a.seconds, a.warmup, servers, freeze_on)
                            results.setdefault(sc, {}).setdefault(srv.label, []).append(f)
                            log("%s rep %d %s: prod %s msg/s pub p99 %s ms e2e p99 %s ms rss %s MB%s%s" % (
                                sc, rep, srv.label, fmt(f.get("produce_msg_per_s")), fmt(f.get("pub_p99_ms")),
                                fmt(f.get("e2e_p99_ms")), f.get("server_rss_max_mb"),
                                "" if "journal_sync_mean_ms" not in f else
                                " syncs: journal %s ms, direct %s ms" % (
                                    fmt(f.get("journal_sync_mean_ms")), fmt(f.get("direct_sync_mean_ms"))),
                                " dirty at start %s MB, kernel wrote %s MB, disk read %s MB" % (
                                    fmt(f.get("dirty_mb_at_start")), fmt(f.get("kernel_written_mb")),
                                    fmt(f.get("disk_read_mb"))) + worst_window(f) + client_late(f)))
                            save()
            # f, g and xcheck: Quire and the first Pulsar configuration only (time)
            for srv in (targets if ci == 0 else []):
                tag = "%s%d" % (srv.label[0] + (cfg or "")[:2], ci)
                if "f" in letters:
                    mb = a.backlog_mb if srv is quire or a.backlog_mb_pulsar is None else a.backlog_mb_pulsar
                    f = run_backlog(srv, perf, tag, mb, a.live_rate, servers, freeze_on)
                    results.setdefault("f", {}).setdefault(srv.label, []).append(f)
                    log("f %s: %s" % (srv.label, f))
                    save()
                if "g" in letters:
                    n = a.topics_quire if srv is quire else a.topics_pulsar
                    f = run_topics(srv, perf, tag, n, a.topics_parallel, a.idle_s, servers, freeze_on)
                    results.setdefault("g", {}).setdefault(srv.label, []).append(f)
                    log("g %s: %s" % (srv.label, f))
                    save()
                if "xcheck" in tokens:
                    tc = os.environ.get("PULSAR_TESTCLIENT_DIR", os.path.join(ROOT, "tests", "compat", ".cache", "pulsar-testclient"))
                    subprocess.run([os.path.join(PULSAR_DIR, "fetch-testclient.sh")], check=True,
                                   env=dict(os.environ, PULSAR_TESTCLIENT_DIR=tc), stdout=sys.stderr)
                    x = run_xcheck(srv, perf, tag, a.xcheck_rate, a.xcheck_seconds, servers, freeze_on, tc)
                    extra.setdefault("xcheck", {})[srv.label] = x
                    log("xcheck %s: %s" % (srv.label, x))
                    save()
            if pul:
                pul.stop()
                servers.remove(pul)
    finally:
        for s in servers:
            s.stop()
        for name in os.listdir(workdir):  # the servers' logs, e.g. Quire's warnings
            if name.endswith(".log"):
                shutil.copy(os.path.join(workdir, name), os.path.join(a.out, "server-" + name))
        shutil.rmtree(workdir, ignore_errors=True)
        save()
    tab = table(results, labels)
    pngs = plot(results, labels, a.out)
    with open(os.path.join(a.out, "summary.md"), "w") as f:
        f.write(tab + "\n")
        if extra:
            f.write("\n```\n" + json.dumps(extra, indent=1) + "\n```\n")
    print(tab)
    if extra:
        print(json.dumps(extra, indent=1))
    for p in pngs:
        print("plot:", os.path.relpath(p, ROOT))


if __name__ == "__main__":
    main()
