import sys, re
c, samp, t0 = sys.argv[1], sys.argv[2], float(sys.argv[3])
S = [list(map(float, l.split())) for l in open(samp)]
# cols: t st0 st1 io0 io1 psicpu psiio wios wticks inflight
iv = []
for l in open(c):
    m = re.match(r'\[\s*([\d.]+)s\].*max ([\d.]+) \|', l)
    if m: iv.append((float(m.group(1)), float(m.group(2))))
def window(a, b):
    rows = [r for r in S if a <= r[0] <= b]
    return rows
def tot(rows):
    if len(rows) < 2: return None
    f, l = rows[0], rows[-1]
    return dict(steal_ms=(l[1]+l[2]-f[1]-f[2])*10, psicpu_ms=(l[5]-f[5])/1000, psiio_ms=(l[6]-f[6])/1000,
                wios=l[7]-f[7], wticks=l[8]-f[8])
allsec = []
for s, mx in iv:
    rows = window(t0 + s - 1.0, t0 + s)
    d = tot(rows)
    if d: allsec.append((s, mx, d))
if len(S[0]) > 11: print('  page reporting: %d passes, %d MiB in the run' % (S[-1][10]-S[0][10], (S[-1][11]-S[0][11])/1024))
if allsec:
    n = len(allsec); st = sum(d['steal_ms'] for _, _, d in allsec) / n
    print('  per 1-s interval, mean: steal %.1f ms, cpu-psi %.1f ms, io-psi %.1f ms, writes %.0f, write ticks %.0f ms' % (
        st, sum(d['psicpu_ms'] for *_, d in allsec)/n, sum(d['psiio_ms'] for *_, d in allsec)/n,
        sum(d['wios'] for *_, d in allsec)/n, sum(d['wticks'] for *_, d in allsec)/n))
for s, mx, d in allsec:
    if mx > 15:
        print('  STALL interval %.0f s max %.1f ms: steal %.0f ms, cpu-psi %.1f, io-psi %.1f, writes %d, write ticks %d' % (
            s, mx, d['steal_ms'], d['psicpu_ms'], d['psiio_ms'], d['wios'], d['wticks']))
        rows = window(t0 + s - 1.2, t0 + s + 0.2)
        for a, b in zip(rows, rows[1:]):
            dst = (b[1]+b[2]-a[1]-a[2])*10; dio = (b[6]-a[6])/1000; dc = (b[5]-a[5])/1000; dt = (b[0]-a[0])*1000
            wt = b[8]-a[8]
            if len(b) > 11 and b[10] != a[10]:
                print('     t=%.3f page reporting pass, +%d KiB' % (b[0]-t0, b[11]-a[11]))
            if dst > 0 or dio > 8 or dc > 8 or dt > 25 or wt > 30:
                print('     t=%.3f dt=%.0fms steal+%.0fms cpu-psi+%.1f io-psi+%.1f wr+%d wticks+%d inflight %d dirty %d KiB writeback %d KiB' % (
                    b[0]-t0, dt, dst, dc, dio, b[7]-a[7], wt, b[9], b[12] if len(b) > 13 else -1, b[13] if len(b) > 13 else -1))
