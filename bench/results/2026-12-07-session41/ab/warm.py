#!/usr/bin/env python3
"""warm.py DIR...: (e)'s warm-up line (consumed msg/s) against the run's (e) result
(produced msg/s, consumers' e2e p99, the device's reads), for every compare.py directory
given; sorted by the warm-up's consumption."""
import json, os, re, sys
rows = []
for d in sys.argv[1:]:
    raw = os.path.join(d, "raw")
    if not os.path.isdir(raw):
        continue
    outs = [f for f in os.listdir(raw) if f.endswith("-e-quire.out")]
    if not outs:
        continue
    m = re.search(r"warm-up\).*?cons ([0-9.]+) msg/s", open(os.path.join(raw, outs[0])).read())
    res = json.load(open(os.path.join(d, "results.json")))["results"]
    if "e" not in res:
        continue
    R = res["e"]["quire"]
    r = R[0] if isinstance(R, list) else R
    rows.append((float(m.group(1)) if m else -1, r["produce_msg_per_s"], r["e2e_p99_ms"] / 1000, r.get("disk_read_mb"), d))
for w, p, e, dr, d in sorted(rows):
    print("%8.0f  %7.0f  %5.1f s  %7s MB  %s" % (w, p, e, dr, d))
