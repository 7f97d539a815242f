import os, sys, time, mmap
d = "/work/main/build-bench/probe"; os.makedirs(d, exist_ok=True)
n = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
SZ = int(sys.argv[2]) if len(sys.argv) > 2 else 4096
FILE = 64 << 20
def run(mode):
    fn = d + "/f-" + mode
    if os.path.exists(fn): os.unlink(fn)
    flags = os.O_RDWR | os.O_CREAT
    fd = os.open(fn, flags, 0o644)
    if mode in ("falloc",): os.posix_fallocate(fd, 0, FILE)
    if mode in ("zeroed", "direct"):
        z = b"\0" * (1 << 20)
        for i in range(FILE >> 20): os.write(fd, z)
        os.fsync(fd)
    if mode == "direct":
        os.close(fd); fd = os.open(fn, os.O_RDWR | os.O_DIRECT)
    buf = mmap.mmap(-1, SZ); buf.write(b"x" * SZ)
    lat = []; off = 0
    for i in range(n):
        t = time.perf_counter(); os.pwrite(fd, buf, off); os.fdatasync(fd); lat.append((time.perf_counter() - t) * 1000); off += SZ
    os.close(fd); os.unlink(fn); lat.sort()
    print("%-7s %s n=%d sz=%d p50 %.3f p90 %.3f p99 %.3f p99.9 %.3f max %.3f ms" % (mode, time.strftime("%T"), n, SZ, lat[n//2], lat[int(n*.9)], lat[int(n*.99)], lat[int(n*.999)], lat[-1]))
for r in range(2):
    for m in ("append", "falloc", "zeroed", "direct"): run(m)
