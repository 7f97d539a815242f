import json,sys
for d in sys.argv[1:]:
    R=json.load(open(d+'/results.json'))['results']
    c=R['c']['quire'][0] if 'c' in R else None; f=R['f']['quire'][0]
    cp=c['pub_p99_ms'] if c else float('nan')
    print('%-28s c p99 %.3f | f live p50 %.3f p95 %.3f p99 %.3f p99.9 %.3f (%.2fx c) catchup %.1f srv add p99 %.3f direct %.3f jsync %.3f cpu %.1f' % (d, cp, f['live_pub_p50_ms'], f['live_pub_p95_ms'], f['live_pub_p99_ms'], f['live_pub_p99.9_ms'], f['live_pub_p99_ms']/cp, f['catchup_mb_per_s'], f['srv_add_p99_ms'], f['srv_direct_p99_ms'], f['srv_jsync_p99_ms'], f['server_cpu_pct']))
