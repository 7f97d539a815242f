# trash.py: fdatasync latency of 4-KiB writes (append / overwrite of a written file / fallocated),
# alone and while another thread truncates a big file 4 MiB per 100 ms (as Quire's GC trash)
import os, sys, time, threading
d = "/work/main/build-bench/probe"; os.makedirs(d, exist_ok=True)
def mkbig(fn, mb):
    fd = os.open(fn, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644); z = b"\1" * (8 << 20)
    for i in range(mb // 8): os.write(fd, z)
    os.fsync(fd); os.close(fd)
stop = False
def trasher(fn):
    fd = os.open(fn, os.O_WRONLY); size = os.lseek(fd, 0, 2)
    while size > 0 and not stop:
        size = max(0, size - (4 << 20)); os.ftruncate(fd, size); time.sleep(0.1)
    os.close(fd)
def probe(mode, n=3000):
    fn = d + "/p-" + mode
    fd = os.open(fn, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    if mode == "falloc": os.posix_fallocate(fd, 0, 64 << 20)
    if mode == "zeroed":
        z = b"\0" * (1 << 20)
        for i in range(64): os.write(fd, z)
        os.fsync(fd)
    buf = b"x" * 4096; lat = []; off = 0
    for i in range(n):
        t = time.perf_counter(); os.pwrite(fd, buf, off); os.fdatasync(fd); lat.append((time.perf_counter() - t) * 1000); off += 4096
        time.sleep(0.001)
    os.close(fd); os.unlink(fn); lat.sort()
    return "p50 %.3f p99 %.3f p99.9 %.3f max %.3f" % (lat[n//2], lat[int(n*.99)], lat[int(n*.999)], lat[-1])
os.system("sync; echo 1 > /proc/sys/vm/drop_caches")
for mode in ("append", "falloc", "zeroed"):
    print("%s %-7s alone      %s" % (time.strftime("%T"), mode, probe(mode)), flush=True)
    mkbig(d + "/big", 2048); os.system("sync; echo 1 > /proc/sys/vm/drop_caches"); time.sleep(2)
    stop = False; t = threading.Thread(target=trasher, args=(d + "/big",)); t.start()
    print("%s %-7s with trash %s" % (time.strftime("%T"), mode, probe(mode)), flush=True)
    stop = True; t.join(); os.unlink(d + "/big")
