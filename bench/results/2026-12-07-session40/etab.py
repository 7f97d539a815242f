import json, sys, glob, os
# (e) per run: produced msg/s, consumers' e2e p99 (s), device read (MB), peak RSS; (c) p99 for context
rows = []
for d in sorted(sys.argv[1:]):
    try:
        r = json.load(open(d + '/results.json'))['results']
    except Exception:
        print(os.path.basename(d), '-'); continue
    e = r['e']['quire'][0]; c = r['c']['quire'][0]
    pe = r['e'].get('pulsar-fsync', [{}])[0]
    print('%-14s e %7.0f msg/s (%.2fx)  e2e p99 %5.1f s  read %6.0f MB  rss %4.0f MB | c p99 %.3f p99.9 %.3f | a %.0f MB/s' % (
        os.path.basename(d), e['produce_msg_per_s'], e['produce_msg_per_s'] / max(pe.get('produce_msg_per_s', 1), 1),
        e['e2e_p99_ms'] / 1000, e.get('disk_read_mb', float('nan')), e['server_rss_max_mb'],
        c['pub_p99_ms'], c['pub_p99.9_ms'], r['a']['quire'][0]['produce_mb_per_s']))
