import json,sys,glob,os
for d in sorted(glob.glob(sys.argv[1]+'/*/results.json')):
    R=json.load(open(d))['results']; c=R['c']['quire'][0]; f=R['f']['quire'][0]
    print('%-10s c p99 %.3f p99.9 %.3f | f live p50 %.3f p99 %.3f p99.9 %.3f (%.2fx) catchup %.1f | add %.3f queue %.3f group %.3f cb %.3f direct %.3f jsync %.3f' % (d.split('/')[-2], c['pub_p99_ms'], c['pub_p99.9_ms'], f['live_pub_p50_ms'], f['live_pub_p99_ms'], f['live_pub_p99.9_ms'], f['live_pub_p99_ms']/c['pub_p99_ms'], f['catchup_mb_per_s'], f['srv_add_p99_ms'], f['srv_queue_p99_ms'], f['srv_group_p99_ms'], f['srv_cb_p99_ms'], f.get('srv_direct_p99_ms',float('nan')), f['srv_jsync_p99_ms']))
