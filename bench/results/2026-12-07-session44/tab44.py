import json,sys
# prints each run's figures, the targets met, and the (c)/(f) attribution fields
for d in sys.argv[1:]:
    J=json.load(open(d+'/results.json')); R=J['results']; X=J['extra']
    q=lambda sc: R[sc]['quire'][0]
    p=lambda sc: R[sc][[k for k in R[sc] if k!='quire'][0]][0]
    a,b,c,dd,e,f,g=[q(x) for x in 'abcdefg']
    print(d)
    ra=a['produce_mb_per_s']/p('a')['produce_mb_per_s']
    print(' a %.1f vs %.1f (%.2fx) | b %d (%.2fx) | d p50 %.3f' % (a['produce_mb_per_s'], p('a')['produce_mb_per_s'], ra, b['produce_msg_per_s'], b['produce_msg_per_s']/p('b')['produce_msg_per_s'], dd['pub_p50_ms']))
    rc=c['pub_p99_ms']/p('c')['pub_p99_ms']
    print(' c p99 %.3f p99.9 %.3f e2e %.3f max %.3f; pulsar %.3f (%.2fx); srv add p99 %.3f max %.3f loop max %s; client late max %s witness max %s' % (c['pub_p99_ms'], c['pub_p99.9_ms'], c['e2e_p99_ms'], c['pub_max_ms'], p('c')['pub_p99_ms'], rc, c['srv_add_p99_ms'], c['srv_add_max_ms'], c.get('srv_loop_max_ms'), c.get('client_late_max_ms'), c.get('witness_max_ms')))
    print('   worst window', c.get('srv_worst'))
    rss=[q(x)['server_rss_max_mb']/p(x)['server_rss_max_mb'] for x in 'abcde']
    print(' e %d (%.2fx) rss ratios %s' % (e['produce_msg_per_s'], e['produce_msg_per_s']/p('e')['produce_msg_per_s'], ' '.join('%.3f'%r for r in rss)))
    fr=f['live_pub_p99_ms']/c['pub_p99_ms']
    print(' f catchup %.1f live p99 %.3f (%.2fx c) srv add %.3f queue %.3f group %.3f cb %.3f; client late max %s witness max %s' % (f['catchup_mb_per_s'], f['live_pub_p99_ms'], fr, f['srv_add_p99_ms'], f['srv_queue_p99_ms'], f['srv_group_p99_ms'], f['srv_cb_p99_ms'], f.get('live_client_late_max_ms'), f.get('live_witness_max_ms')))
    print(' g %.0f/s peak %.1f MB idle %.2f %% | start %s ms' % (g['topics_per_s'], g['rss_peak_mb'], g['idle_cpu_pct'], X.get('quire_start',{}).get('ready_ms_median')))
    met=dict(c_p99=c['pub_p99_ms']<3.2, c_p999=c['pub_p99.9_ms']<6, c_e2e=c['e2e_p99_ms']<5, c_ratio=rc<=1/3, f2x=fr<=2,
             a=ra>=3 and a['produce_mb_per_s']>=200, b=b['produce_msg_per_s']>=2e6, d=dd['pub_p50_ms']<0.5, fcu=f['catchup_mb_per_s']>=500,
             g=g['rss_peak_mb']<1000 and g['topics_per_s']>=10000 and g['idle_cpu_pct']<1, rss=max(rss)<=0.1, start=X.get('quire_start',{}).get('ready_ms_median',999)<100)
    print(' met:', ' '.join(k for k,v in met.items() if v), '| missed:', ' '.join(k for k,v in met.items() if not v))
