import sys, re, collections
# For each wakeup of a watched task, delay until it runs; and which tasks ran on both CPUs meanwhile (and how long they had run uninterrupted).
watch = set(sys.argv[2].split(','))
cur = {}       # cpu -> (comm, since)
waking = {}    # pid -> time
stats = collections.Counter(); blame = collections.Counter(); n = collections.Counter()
rx = re.compile(r'\[(\d+)\]\s+([\d.]+):\s+sched:(\w+): (.*)')
for line in open(sys.argv[1]):
    m = rx.match(line.strip())
    if not m: continue
    cpu, t, ev, tr = int(m.group(1)), float(m.group(2)), m.group(3), m.group(4)
    if ev == 'sched_waking':
        comm = re.search(r'comm=(\S+)', tr).group(1); pid = re.search(r'pid=(\d+)', tr).group(1)
        if comm in watch and pid not in waking: waking[pid] = (t, comm)
    elif ev == 'sched_switch':
        pc = re.search(r'prev_comm=(\S+)', tr).group(1)
        nc = re.search(r'next_comm=(\S+)', tr).group(1); npid = re.search(r'next_pid=(\d+)', tr).group(1)
        if npid in waking:
            tw, comm = waking.pop(npid); d = (t - tw) * 1000
            n[comm] += 1
            if d > 1.0:
                stats[comm] += 1
                # who had the CPUs: the task switched out here and how long it ran
                since = cur.get(cpu, (pc, t))[1]
                blame[(comm, pc, 'ran %.1fms' % ((t - since) * 1000) if (t - since) * 1000 < 1 else 'ran>1ms')] += 1
        cur[cpu] = (nc, t)
print('delays >1ms per task:', dict(stats), 'wakeups', dict(n))
for k, v in blame.most_common(25): print(v, k)
