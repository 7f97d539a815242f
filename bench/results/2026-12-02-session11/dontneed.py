# dontneed.py DATA_DIR J|L: posix_fadvise(DONTNEED) on the journal files (J) or on every other file (L)
import os, sys
root, which = sys.argv[1], sys.argv[2]
for d, _, files in os.walk(root):
    for f in files:
        p = os.path.join(d, f)
        if (which == "J") != (p.endswith(".jnl")):
            continue
        try:
            fd = os.open(p, os.O_RDONLY)
        except OSError:
            continue
        os.fdatasync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
