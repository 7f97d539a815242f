#!/usr/bin/env python3
"""mtab.py METRICS FROM_HHMMSS TO_HHMMSS: per-second deltas of the scraped counters."""
import sys, collections, datetime
rows = collections.OrderedDict()
for l in open(sys.argv[1]):
    t, rest = l.split(" ", 1)
    name, val = rest.rsplit(" ", 1)
    try:
        rows.setdefault(float(t), {})[name.split("{")[0]] = float(val)
    except ValueError:
        pass
def hms(t): return datetime.datetime.utcfromtimestamp(t).strftime("%H:%M:%S")
keys = ["quire_ml_cache_hits_total", "quire_ml_cache_misses_total", "bookkeeper_server_READ_ENTRY_count", "quire_bookie_disk_read_entries_total",
        "bookie_read_cache_hits_total", "bookkeeper_server_ADD_ENTRY_count", "process_cpu_seconds_total", "quire_broker_publish_buffer_pauses_total",
        "quire_broker_socket_writes_total", "quire_bookie_reads_waited_total", "quire_ml_reads_waited_total", "quire_ml_cache_evictions_total"]
short = ["mlhit", "mlmiss", "bkread", "diskrd", "rchit", "adds", "cpu", "pauses", "sockw", "bkwait", "mlwait", "evict"]
gauges = ["pulsar_ml_cache_used_size", "quire_ml_reads_inflight_bytes", "quire_broker_publish_buffer_bytes", "quire_ml_reads_waiting", "quire_broker_write_queue_bytes"]
gshort = ["mlused", "mlinfl", "pbuf", "mlwaiting", "wq"]
lo, hi = sys.argv[2], sys.argv[3]
prev = None
print("time     " + " ".join("%9s" % s for s in short + gshort))
for t, r in rows.items():
    if prev and lo <= hms(t) <= hi:
        dt = t - prev[0]
        out = []
        for k in keys:
            a, b = r.get(k), prev[1].get(k)
            out.append("%9.0f" % ((a - b) / dt) if a is not None and b is not None else "%9s" % "-")
        for k in gauges:
            out.append("%9.0f" % r[k] if k in r else "%9s" % "-")
        print(hms(t), " ".join(out))
    prev = (t, r)
