import sys
# perf sched timehist lines: time [cpu] task wait schdelay run
last = {}  # cpu -> (task, run)
n2 = n5 = idle2 = idle5 = 0
for l in open(sys.argv[1]):
    f = l.split()
    if len(f) < 6 or not f[1].startswith('['): continue
    try: t = float(f[0]); sd = float(f[-2]); run = float(f[-1])
    except ValueError: continue
    cpu = f[1]; task = ' '.join(f[2:-3])
    prev = last.get(cpu)
    if sd > 2 and (task.startswith('quire') or task.startswith('bk-')):
        wasidle = prev is not None and prev[0].startswith('<idle>')
        n2 += 1; idle2 += wasidle
        if sd > 5: n5 += 1; idle5 += wasidle
    last[cpu] = (task, run)
print('  quire/quire-perf threads: sch delay >2 ms: %d (%d with the cpu idle before), >5 ms: %d (%d idle)' % (n2, idle2, n5, idle5))
