import json, os, re, sys
def last(m, name):
    v = None
    for l in open(m):
        p = l.split()
        if len(p) == 3 and p[1].startswith(name):
            v = float(p[2])
    return v
for d, label in [a.split(':') for a in sys.argv[1:]]:
    R = json.load(open(os.path.join(d, 'results.json')))['results']
    q = lambda s: (R[s]['quire'][0] if isinstance(R[s]['quire'], list) else R[s]['quire'])
    p = lambda s: (R[s]['pulsar-fsync'][0] if isinstance(R[s]['pulsar-fsync'], list) else R[s]['pulsar-fsync'])
    e, f = q('e'), q('f')
    out = [x for x in os.listdir(os.path.join(d, 'raw')) if x.endswith('-e-quire.out')][0]
    w = float(re.search(r'warm-up\).*?cons ([0-9.]+) msg/s', open(os.path.join(d, 'raw', out)).read()).group(1))
    m = d + '.metrics'
    ext = last(m, 'quire_ml_cache_ttl_extensions_total')
    print('| `%s` | %s; %.1f s | %s | %s MB | %s; %s; %s | %.1f MB/s; %.3f ms; %.1f MB (%.3fx) |' % (
        label, format(int(round(e['produce_msg_per_s'])), ','), e['e2e_p99_ms'] / 1000, format(int(round(w)), ','),
        format(round(e.get('disk_read_mb') or 0), ','), format(int(last(m, 'quire_ml_cache_misses_total')), ','),
        format(int(last(m, 'quire_ml_cache_evictions_total{cluster="standalone",reason="age"}')), ','),
        format(int(ext), ',') if ext is not None else '-', f['catchup_mb_per_s'], f['live_pub_p99_ms'], f['server_rss_max_mb'],
        f['server_rss_max_mb'] / p('f')['server_rss_max_mb']))
