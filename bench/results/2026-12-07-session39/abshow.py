import json, sys
keys_c=['pub_p99_ms','pub_p99.9_ms','e2e_p99_ms','srv_add_p99_ms','srv_add_p99_max_ms']
for d in sys.argv[1:]:
    try: r=json.load(open(d+'/results.json'))['results']
    except Exception as e: print(d,'-'); continue
    out=[d]
    if 'a' in r: out.append('a %.0f MB/s' % r['a']['quire'][0]['produce_mb_per_s'])
    if 'b' in r: out.append('b %.2fM' % (r['b']['quire'][0]['produce_msg_per_s']/1e6))
    if 'c' in r:
        c=r['c']['quire'][0]; out.append('c '+' / '.join('%.3f'%c[k] for k in keys_c))
        if 'pulsar-fsync' in r['c']: out.append('pulsar c p99 %.1f' % r['c']['pulsar-fsync'][0]['pub_p99_ms'])
    if 'e' in r:
        e=r['e']['quire'][0]; out.append('e %.0f e2e99 %.1fs rss %.0f' % (e['produce_msg_per_s'], e['e2e_p99_ms']/1000, e['server_rss_max_mb']))
    if 'f' in r:
        f=r['f']['quire'][0]; out.append('f %.0f MB/s live %.3f' % (f.get('catchup_mb_per_s',0), f.get('live_pub_p99_ms',0)))
    print(' | '.join(out))
