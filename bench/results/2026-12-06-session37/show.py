#!/usr/bin/env python3
# usage: show.py RUN_DIR...: the figures of each scenario of compare.py results (Quire)
import json,sys
keys={'a':['produce_mb_per_s','pub_p99_ms'],'b':['produce_msg_per_s','consume_msg_per_s'],'c':['pub_p50_ms','pub_p99_ms','pub_p99.9_ms','e2e_p99_ms','srv_add_p99_ms'],'d':['pub_p50_ms'],'e':['produce_msg_per_s','server_rss_max_mb'],'f':['catchup_mb_per_s','live_rate','srv_add_p99_ms','srv_jsync_p99_ms','live_pub_p99_ms','live_pub_p50_ms']}
for f in sys.argv[1:]:
    R=json.load(open(f+'/results.json'))['results']
    out=[]
    for sc in 'abcdef':
        if sc not in R: continue
        q=R[sc]['quire'][0] if isinstance(R[sc]['quire'],list) else R[sc]['quire']
        vals=[]
        for k in keys[sc]:
            m=[kk for kk in q if kk==k]
            if not m:
                m=[kk for kk in q if k.split('_')[0] in kk and k.split('_')[-1] in kk][:1]
            vals.append('%s=%s'%(m[0] if m else k, q[m[0]] if m else '?'))
        out.append(sc+': '+' '.join(vals))
    print(f.split('/')[-1]); print('  '+'\n  '.join(out))
