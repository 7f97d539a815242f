"""fparts.py SCRAPE...: the 1-s windows' quantiles of the latency summaries in /metrics
scrapes (files in time order; a window is printed once, when it first appears), then the
median of each column over the windows with traffic."""
import math
import re
import statistics
import sys

FAMS = [("pub", "pulsar_broker_publish_latency"), ("add", "bookie_journal_JOURNAL_ADD_ENTRY"),
        ("jsync", "bookie_journal_JOURNAL_SYNC"), ("direct", "quire_bookie_direct_sync_latency")]
QS = ["0.5", "0.99", "0.999"]
rows, last = [], None
for path in sorted(sys.argv[1:], key=lambda p: float(p.rsplit(".m.", 1)[1])):
    vals = {}
    for line in open(path):
        m = re.match(r'(\w+)\{[^}]*quantile="([0-9.]+)"\} (\S+)', line)
        if m:
            vals[(m.group(1), m.group(2))] = float(m.group(3))
    row = [vals.get((f, q), math.nan) for _, f in FAMS for q in QS]
    if all(math.isnan(v) for v in row) or row == last:
        continue
    last = row
    rows.append(row)
print("  window  " + "  ".join(f"{n} p50/p99/p99.9".ljust(20) for n, _ in FAMS))
for i, row in enumerate(rows):
    cells = ["/".join(f"{v:.2f}" for v in row[k:k + 3]) for k in range(0, len(row), 3)]
    print(f"  {i:6d}  " + "  ".join(c.ljust(20) for c in cells))
if rows:
    med = [statistics.median(v for v in col if not math.isnan(v)) if any(not math.isnan(v) for v in col) else math.nan
           for col in zip(*rows)]
    print("  median  " + "  ".join("/".join(f"{v:.2f}" for v in med[k:k + 3]).ljust(20)
                                  for k in range(0, len(med), 3)))
