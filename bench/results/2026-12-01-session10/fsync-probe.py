import os, sys, time
fn = sys.argv[1]; n = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
fd = os.open(fn, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
buf = b"x" * 4096; lat = []
for i in range(n):
    t = time.perf_counter(); os.write(fd, buf); os.fdatasync(fd); lat.append((time.perf_counter() - t) * 1000)
os.close(fd); os.unlink(fn); lat.sort()
print("%s n=%d p50 %.3f p99 %.3f p99.9 %.3f max %.3f ms" % (time.strftime("%T"), n, lat[n//2], lat[int(n*.99)], lat[int(n*.999)], lat[-1]))
