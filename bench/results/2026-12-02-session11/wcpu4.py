# sys CPU per GiB of 64-KiB writes + fdatasync every 1 MiB into a new file, 4 GiB, with and
# without dropping the synced pages (POSIX_FADV_DONTNEED) every 1 MiB
import os, sys, time, resource
d = "/work/main/build-bench/probe"; os.makedirs(d, exist_ok=True)
fn = d + "/w4"
buf = bytearray(os.urandom(65536))
for drop in (int(sys.argv[1]),):
    fd = os.open(fn, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o644)
    off = 0; dropped = 0; out = []
    for g in range(int(sys.argv[2])):
        r0 = resource.getrusage(resource.RUSAGE_SELF)
        for i in range(16384):
            os.pwrite(fd, buf, off); off += 65536
            if off % (1 << 20) == 0:
                os.fdatasync(fd)
                if drop:
                    os.posix_fadvise(fd, dropped, off - dropped, os.POSIX_FADV_DONTNEED); dropped = off
        r1 = resource.getrusage(resource.RUSAGE_SELF)
        out.append("%.2f" % (r1.ru_stime - r0.ru_stime))
    os.close(fd); os.unlink(fn)
    print("drop=%d sys s per GiB: %s" % (drop, " ".join(out)), flush=True)
