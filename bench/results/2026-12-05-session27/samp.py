# samp.py OUT SECS: every 10 ms, monotonic-free wall time + per-cpu steal/iowait (ticks),
# PSI totals (us) for cpu/io, vda write ios + write ticks + in-flight.
import sys, time
out = open(sys.argv[1], 'w'); end = time.time() + float(sys.argv[2])
def psi(n):
    with open('/proc/pressure/' + n) as f:
        return f.readline().split('total=')[1].strip()
while time.time() < end:
    t = time.time()
    with open('/proc/stat') as f:
        f.readline(); c0 = f.readline().split(); c1 = f.readline().split()
    with open('/sys/block/vda/stat') as f:
        d = f.read().split()
    with open('/sys/module/page_reporting/parameters/passes') as f: ps = f.read().strip()
    with open('/sys/module/page_reporting/parameters/reported_kib') as f: rk = f.read().strip()
    dirty = wb = '0'
    with open('/proc/meminfo') as f:
        for l in f:
            if l.startswith('Dirty:'): dirty = l.split()[1]
            elif l.startswith('Writeback:'): wb = l.split()[1]; break
    out.write('%.4f %s %s %s %s %s %s %s %s %s %s %s %s %s\n' % (t, c0[8], c1[8], c0[5], c1[5], psi('cpu'), psi('io'), d[4], d[7], d[8], ps, rk, dirty, wb))
    time.sleep(0.01)
