import json, sys, glob, os, statistics as stt
d=sys.argv[1]
rows={}
for f in sorted(glob.glob(d+'/*/results.json')):
    n=os.path.basename(os.path.dirname(f))
    r=json.load(open(f))['results']
    g=lambda sc: (r.get(sc,{}).get('quire') or [{}])[0]
    a,b,c,fr=g('a'),g('b'),g('c'),g('f')
    row=dict(a=a.get('produce_mb_per_s'), b=b.get('produce_msg_per_s'), c50=c.get('pub_p50_ms'), c99=c.get('pub_p99_ms'), c999=c.get('pub_p99.9_ms'), cadd=c.get('srv_add_p99_ms'), cgrp=c.get('srv_group_p99_ms'), cw=c.get('witness_max_ms'),
             f99=fr.get('live_pub_p99_ms'), fcu=fr.get('catchup_mb_per_s'), fadd=fr.get('srv_add_p99_ms'))
    rows[n]=row
    print('%-7s ' % n + ' '.join('%s %s' % (k, ('%.3f' % v if isinstance(v,float) and v<100 else ('%.0f' % v if v is not None else '-'))) for k,v in row.items()))
for pre in ['base','v']:
    sel=[v for k,v in rows.items() if k.startswith(pre+'-')]
    if not sel: continue
    print(pre, 'medians:', ' '.join('%s %.3f' % (k, stt.median([x[k] for x in sel if x.get(k) is not None])) for k in sel[0] if any(x.get(k) is not None for x in sel)))
