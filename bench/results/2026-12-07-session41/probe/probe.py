#!/usr/bin/env python3
"""probe.py FILE [skip_s]: per add (submit, pick, io0, io1, done) in us; splits the add's
time into wait (submit->io0: the journal thread's pick-up, the group before it and the
group's forming), io (io0->io1: the group's writes and syncs) and back (io1->done: the
completion's way to the loop thread). Prints percentiles of each and of the total, and
what the slowest 1 % and 0.1 % of adds are made of on average."""
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1])]
skip = float(sys.argv[2]) if len(sys.argv) > 2 else 3.0
t0 = rows[0][0]
rows = [r for r in rows if r[0] - t0 >= skip * 1e6]
def pct(v, q):
    v = sorted(v); return v[min(len(v) - 1, int(q * len(v)))]
tot = [r[4] - r[0] for r in rows]
wait_pick = [r[1] - r[0] for r in rows]
wait = [r[2] - r[0] for r in rows]
io = [r[3] - r[2] for r in rows]
back = [r[4] - r[3] for r in rows]
print("adds %d over %.1f s" % (len(rows), (rows[-1][0] - rows[0][0]) / 1e6))
for name, v in (("total", tot), ("pick", wait_pick), ("wait", wait), ("io", io), ("back", back)):
    print("%-6s p50 %6.3f p90 %6.3f p99 %6.3f p99.9 %6.3f max %7.3f ms" % (name, pct(v, .5) / 1e3, pct(v, .9) / 1e3, pct(v, .99) / 1e3, pct(v, .999) / 1e3, max(v) / 1e3))
order = sorted(range(len(rows)), key=lambda i: tot[i])
for frac in (0.01, 0.001):
    k = max(1, int(len(rows) * frac))
    sl = order[-k:]
    m = lambda v: sum(v[i] for i in sl) / k / 1e3
    print("slowest %.1f%% (%d): total %.3f = wait %.3f (pick %.3f) + io %.3f + back %.3f ms" % (frac * 100, k, m(tot), m(wait), m(wait_pick), m(io), m(back)))
