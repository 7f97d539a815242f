p='/work/main/docs/performance.md'
lines=open(p).read().split('\n')
P='session 43 (section "Session 43"; `cmp1`-`cmp3`, at 2e929b55): '
new={
'(a) >= 3x Pulsar\'s throughput': '892.1 vs 148.9 MB/s (5.99x), **1,076.5 vs 143.0 (7.53x)**, 754.4 vs 130.5 (5.78x)',
'(a) >= 200 MB/s': '892.1, **1,076.5**, 754.4 MB/s',
'(b) >= 2,000,000 msg/s end to end': '**6,919,607** (4.89x), 6,820,248 (4.97x), 6,271,798 (5.27x)',
'(c) publish p99 < 3.2 ms': '**1.959 ms, p99.9 3.727**, e2e 1.967 (Pulsar 9.983: 0.20x); 3.167 ms, **p99.9 8.191**, e2e 3.167 (Pulsar 7.935: **0.40x**); 1.951 ms, **p99.9 7.231**, e2e 1.943 (Pulsar 245.8: 0.01x): the server\'s own add p99 0.84, 0.86, 0.74 ms; `cmp2` and `cmp3` each one slow moment of the disk (a group\'s direct-log write and sync at 7.3 and 8.8 ms in their worst 1-s window); all four met in `cmp1`',
'(d) publish p50 < 0.5 ms': '0.214, 0.197, **0.189** ms',
'(e) (no numeric target)': '174,663 (6.99x), 168,688 (7.35x), **180,345** msg/s (8.07x): all three in its high mode',
'(f) catch-up >= 500 MB/s': '856.3, **952.9**, 896.0 MB/s (Pulsar 267.4, 252.3, 267.0)',
'(f) live publish p99 within 2x of (c)': '4.191 ms (**2.14x** (c)\'s 1.959: missed), 4.063 (1.28x its 3.167), **3.871** (1.98x its 1.951): met in two of three; the live add\'s p99 2.8-2.9 ms, 1.5 of it waiting for the journal thread',
'(g) 100,000 topics < 1 GB RSS': '645.2, **637.4**, 646.5 MB peak',
'(g) idle CPU < 1 %': '0.10 %, 0.10 %, **0.07 %**',
'(g) >= 10,000 topics/s': '**15,760**, 15,478, 15,626/s',
'Quire RSS <= 1/10 of Pulsar\'s': '(a) 0.048x, **0.072x**, 0.056x, (e) 0.056x, 0.070x, 0.057x, (f) 0.022x, 0.024x, 0.022x, the others 0.01-0.02x',
'`quire standalone` ready within 100 ms': '8.7, **7.7**, 11.3 ms (medians of 5)',
}
done=set()
start=lines.index('### Targets')
for i in range(start, start+30):
    l=lines[i]
    if not l.startswith('| ') or l.startswith('| target') : continue
    label=l[2:].split(' | ')[0]
    for k,v in new.items():
        if label.startswith(k) and k not in done:
            rest=l[2+len(label)+3:]
            assert rest.startswith('session 42'), (k, rest[:40])
            lines[i]='| '+label+' | '+P+v+'; '+rest
            done.add(k)
assert done==set(new), set(new)-done
open(p,'w').write('\n'.join(lines))
print('updated', len(done))
