import json,sys
for d in sys.argv[1:]:
    R=json.load(open(d+'/results.json'))['results']
    q=lambda sc: R[sc]['quire'][0]
    p=lambda sc: R[sc][[k for k in R[sc] if k!='quire'][0]][0]
    a,b,c,dd,e,f,g=[q(x) for x in 'abcdefg']
    print(d)
    print(' a %.1f vs %.1f (%.2fx) | b %d (%.2fx) | d p50 %.3f' % (a['produce_mb_per_s'], p('a')['produce_mb_per_s'], a['produce_mb_per_s']/p('a')['produce_mb_per_s'], b['produce_msg_per_s'], b['produce_msg_per_s']/p('b')['produce_msg_per_s'], dd['pub_p50_ms']))
    print(' c p99 %.3f p99.9 %.3f e2e %.3f; pulsar %.3f (%.2fx); srv add %.3f queue %.3f group %.3f cb %.3f addmax %.3f worst %s' % (c['pub_p99_ms'], c['pub_p99.9_ms'], c['e2e_p99_ms'], p('c')['pub_p99_ms'], c['pub_p99_ms']/p('c')['pub_p99_ms'], c['srv_add_p99_ms'], c['srv_queue_p99_ms'], c['srv_group_p99_ms'], c['srv_cb_p99_ms'], c['srv_add_max_ms'], c.get('srv_worst')))
    print(' e %d (%.2fx) rss %.3fx' % (e['produce_msg_per_s'], e['produce_msg_per_s']/p('e')['produce_msg_per_s'], e['server_rss_max_mb']/p('e')['server_rss_max_mb']))
    print(' f catchup %.1f live p99 %.3f (%.2fx c) srv add %.3f queue %.3f group %.3f cb %.3f direct %.3f jsync %.3f' % (f['catchup_mb_per_s'], f['live_pub_p99_ms'], f['live_pub_p99_ms']/c['pub_p99_ms'], f['srv_add_p99_ms'], f['srv_queue_p99_ms'], f['srv_group_p99_ms'], f['srv_cb_p99_ms'], f['srv_direct_p99_ms'], f['srv_jsync_p99_ms']))
    print(' g %.0f/s peak %.1f MB idle %.2f %%' % (g['topics_per_s'], g['rss_peak_mb'], g['idle_cpu_pct']))
    st=R.get('start',{}).get('quire',[{}])[0]
    print(' start', st.get('ready_ms_median'))
