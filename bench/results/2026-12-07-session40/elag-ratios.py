import re, glob, sys
# elag.sh's rounds: consumed msg/s, consumed MiB, the device's reads (MiB) and their ratio.
# Rounds 1-4 from elag-earlier.txt (printed to the terminal), the others from elag-*.txt.
d = sys.argv[1] if len(sys.argv) > 1 else 'elag'
rows = {}
for line in open(d + '/elag-earlier.txt'):
    m = re.match(r'(elag-\w+-\d+):\s+consumed (\d+) msgs ([\d.]+) msg/s; device read (\d+) MB', line)
    if m: rows[m.group(1)] = (int(m.group(2)), float(m.group(3)), int(m.group(4)))
for f in glob.glob(d + '/elag-*-[0-9].txt'):
    t = open(f).read()
    m = re.search(r'consumed\s+(\d+) msgs\s+([\d.]+) msg/s', t); r = re.search(r'device read (\d+) MB', t)
    rows[f.split('/')[-1][:-4]] = (int(m.group(1)), float(m.group(2)), int(r.group(1)))
print('# run: consumed msg/s, consumed MiB (1 KiB payloads), device read MiB, read/consumed')
for v in ['new', 'base', 'l1g']:
    for k in sorted(r for r in rows if r.split('-')[1] == v):
        n, rate, rd = rows[k]
        print('%-12s %9.0f msg/s %6.0f MiB consumed %5d MiB read %.2fx' % (k, rate, n / 1024, rd, rd / (n / 1024)))
