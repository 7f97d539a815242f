# sys CPU per GiB of sequential 64-KiB writes into a new file, GiB by GiB, the file kept
# (so every page is a new page-cache page), after the page cache was dropped and 5 s passed
import os, sys, time, resource
d = "/work/main/build-bench/probe"; os.makedirs(d, exist_ok=True)
fn = d + "/w3"
os.system("sync; echo 1 > /proc/sys/vm/drop_caches"); time.sleep(5)
buf = bytearray(os.urandom(65536))
fd = os.open(fn, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
off = 0
for g in range(int(sys.argv[1])):
    r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.time()
    for i in range(16384):
        os.pwrite(fd, buf, off); off += 65536
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    print("GiB %d: sys %.2f s, wall %.2f s" % (g, r1.ru_stime - r0.ru_stime, time.time() - t0), flush=True)
os.close(fd)
os.system("free -m | head -2")
os.unlink(fn)
# the same again at once: the pages just freed are not yet reported
fd = os.open(fn, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644); off = 0
r0 = resource.getrusage(resource.RUSAGE_SELF)
for i in range(16384):
    os.pwrite(fd, buf, off); off += 65536
r1 = resource.getrusage(resource.RUSAGE_SELF)
print("right after freeing: 1 GiB sys %.2f s" % (r1.ru_stime - r0.ru_stime))
os.close(fd); os.unlink(fn)
