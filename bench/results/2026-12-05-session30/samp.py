# samp.py OUT SECS: every 5 ms: CLOCK_MONOTONIC ms, vda write ios, write ticks, in flight,
# discard ios, discard ticks, flush ios, flush ticks, Dirty kB, Writeback kB, steal cpu0, cpu1
import sys, time
out = open(sys.argv[1], 'w'); end = time.monotonic() + float(sys.argv[2])
out.write("mono_ms wr_ios wr_ticks inflight disc_ios disc_ticks fl_ios fl_ticks dirty_kb wb_kb steal0 steal1\n")
while time.monotonic() < end:
    t = time.monotonic()
    with open('/sys/block/vda/stat') as f:
        d = f.read().split()
    with open('/proc/stat') as f:
        f.readline(); c0 = f.readline().split(); c1 = f.readline().split()
    dirty = wb = '0'
    with open('/proc/meminfo') as f:
        for l in f:
            if l.startswith('Dirty:'): dirty = l.split()[1]
            elif l.startswith('Writeback:'): wb = l.split()[1]; break
    out.write('%.2f %s %s %s %s %s %s %s %s %s %s %s\n' % (t*1000, d[4], d[7], d[8], d[11], d[14], d[15], d[16], dirty, wb, c0[8], c1[8]))
    time.sleep(0.005)
