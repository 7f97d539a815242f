# abf.py DIR: each run's (c) and (f) figures, the server's parts of (f)'s live add, and the medians of each side
import json, sys, glob, os, statistics as stt
d = sys.argv[1]
rows = {}
for f in sorted(glob.glob(d + '/*/results.json')):
    n = os.path.basename(os.path.dirname(f))
    r = json.load(open(f))['results']
    c = (r.get('c', {}).get('quire') or [{}])[0]
    x = (r.get('f', {}).get('quire') or [{}])[0]
    rows[n] = dict(c99=c.get('pub_p99_ms'), c999=c.get('pub_p99.9_ms'), cadd=c.get('srv_add_p99_ms'),
                   f99=x.get('live_pub_p99_ms'), fcu=x.get('catchup_mb_per_s'), fadd=x.get('srv_add_p99_ms'),
                   fq=x.get('srv_queue_p99_ms'), fg=x.get('srv_group_p99_ms'), fcb=x.get('srv_cb_p99_ms'),
                   floop=x.get('srv_loop_p99_ms'), fpub=x.get('srv_publish_p99_ms'), fw=x.get('live_witness_max_ms'))
    print('%-7s ' % n + ' '.join('%s %s' % (k, '-' if v is None else ('%.0f' % v if v >= 100 else '%.3f' % v)) for k, v in rows[n].items()))
for pre in ['base', 'v']:
    sel = [v for k, v in rows.items() if k.startswith(pre + '-')]
    if sel:
        print(pre, 'medians:', ' '.join('%s %.3f' % (k, stt.median([x[k] for x in sel if x.get(k) is not None])) for k in sel[0]))
