#!/usr/bin/env python3
"""abtab.py DIR...: per ab run (compare.py directories with a DIR.metrics beside them):
(c) p99 / p99.9; (e) produced msg/s, consumers' e2e p99, the warm-up's consumed msg/s,
the device's reads, RSS; the entry cache's misses, age evictions and TTL extensions
over the run (from the scraped /metrics); (f) catch-up and live p99, RSS."""
import json, re, sys, os
def last(metrics, name):
    v = None
    if not os.path.exists(metrics):
        return None
    for l in open(metrics):
        p = l.split()
        if len(p) == 3 and p[1].startswith(name):
            v = float(p[2])
    return v
for d in sys.argv[1:]:
    R = json.load(open(os.path.join(d, "results.json")))["results"]
    q = lambda s: (R[s]["quire"][0] if isinstance(R[s]["quire"], list) else R[s]["quire"])
    p = lambda s: (R[s]["pulsar-fsync"][0] if isinstance(R[s]["pulsar-fsync"], list) else R[s]["pulsar-fsync"])
    e, c = q("e"), q("c")
    warm = ""
    for f in os.listdir(os.path.join(d, "raw")):
        if f.endswith("-e-quire.out"):
            m = re.search(r"warm-up\).*?cons ([0-9.]+) msg/s", open(os.path.join(d, "raw", f)).read())
            warm = m.group(1) if m else ""
    m = d.rstrip("/") + ".metrics"
    row = "%-10s c %.3f/%.3f | e %7.0f e2e %5.1f s warm-cons %8s disk %6.1f MB rss %.3fx | misses %s age %s ext %s" % (
        os.path.basename(d.rstrip("/")), c["pub_p99_ms"], c["pub_p99.9_ms"], e["produce_msg_per_s"], e["e2e_p99_ms"] / 1000,
        warm, e.get("disk_read_mb") or 0, e["server_rss_max_mb"] / p("e")["server_rss_max_mb"],
        last(m, "quire_ml_cache_misses_total"), last(m, 'quire_ml_cache_evictions_total{cluster="standalone",reason="age"}'),
        last(m, "quire_ml_cache_ttl_extensions_total"))
    if "f" in R:
        f = q("f")
        row += " | f %.1f MB/s live %.3f (%.2fx c) rss %.1f MB %.3fx" % (f["catchup_mb_per_s"], f["live_pub_p99_ms"], f["live_pub_p99_ms"] / c["pub_p99_ms"], f["server_rss_max_mb"], f["server_rss_max_mb"] / p("f")["server_rss_max_mb"])
    print(row)
