import json, sys, glob, os
d=sys.argv[1]
rows=[]
for f in sorted(glob.glob(d+'/*/results.json')):
    n=os.path.basename(os.path.dirname(f))
    r=json.load(open(f))['results']
    c=r.get('c',{}).get('quire',[{}])[0]; fr=r.get('f',{}).get('quire',[{}])[0]
    print('%-7s c p50 %.3f p99 %.3f p99.9 %6.2f max %6.2f srv_add %.3f grp %.3f dir %.3f js %.3f | f live p99 %6.3f p99.9 %6.2f catchup %5.0f add %.3f grp %.3f' % (n, c.get('pub_p50_ms',0), c.get('pub_p99_ms',0), c.get('pub_p99.9_ms',0), c.get('pub_max_ms',0), c.get('srv_add_p99_ms',0), c.get('srv_group_p99_ms',0), c.get('srv_direct_p99_ms',0), c.get('srv_jsync_p99_ms',0), fr.get('live_pub_p99_ms',0), fr.get('live_pub_p99.9_ms',0), fr.get('catchup_mb_per_s',0), fr.get('srv_add_p99_ms',0), fr.get('srv_group_p99_ms',0)))
