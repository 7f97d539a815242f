import json, sys
def g(d): return json.load(open(d+'/results.json'))
for d in sys.argv[1:]:
    r=g(d); R=r['results']; q=lambda s: R[s]['quire'][0]; p=lambda s: R[s]['pulsar-fsync'][0]
    a,pa=q('a'),p('a'); b,pb=q('b'),p('b'); c,pc=q('c'),p('c'); dd=q('d'); e,pe=q('e'),p('e'); f,pf=q('f'),p('f'); gg,pg=q('g'),p('g')
    print('==',d)
    print(' a %.1f vs %.1f MB/s (%.2fx) e2e p99 %.1f rss %.1f vs %.0f (%.3fx)'%(a['produce_mb_per_s'],pa['produce_mb_per_s'],a['produce_mb_per_s']/pa['produce_mb_per_s'],a['e2e_p99_ms'],a['server_rss_max_mb'],pa['server_rss_max_mb'],a['server_rss_max_mb']/pa['server_rss_max_mb']))
    print(' b %d (%.2fx) consumed %d rss %.3fx'%(b['produce_msg_per_s'],b['produce_msg_per_s']/pb['produce_msg_per_s'],b['consume_msg_per_s'],b['server_rss_max_mb']/pb['server_rss_max_mb']))
    print(' c p99 %.3f p99.9 %.3f e2e %.3f; pulsar %.2f (%.2fx); srv add p99 %.3f max %.3f rss %.3fx'%(c['pub_p99_ms'],c['pub_p99.9_ms'],c['e2e_p99_ms'],pc['pub_p99_ms'],c['pub_p99_ms']/pc['pub_p99_ms'],c['srv_add_p99_ms'],c['srv_add_p99_max_ms'],c['server_rss_max_mb']/pc['server_rss_max_mb']))
    print(' d p50 %.3f (pulsar %.3f) rss %.3fx'%(dd['pub_p50_ms'],p('d')['pub_p50_ms'],dd['server_rss_max_mb']/p('d')['server_rss_max_mb']))
    print(' e %d vs %d (%.2fx) e2e p99 %.1f s rss %.1f vs %.0f (%.3fx) disk read %s MB'%(e['produce_msg_per_s'],pe['produce_msg_per_s'],e['produce_msg_per_s']/pe['produce_msg_per_s'],e['e2e_p99_ms']/1000,e['server_rss_max_mb'],pe['server_rss_max_mb'],e['server_rss_max_mb']/pe['server_rss_max_mb'],e.get('disk_read_mb')))
    print(' f catchup %.1f (pulsar %.1f) live p99 %.3f (%.4fx c) rss %.3fx'%(f['catchup_mb_per_s'],pf['catchup_mb_per_s'],f['live_pub_p99_ms'],f['live_pub_p99_ms']/c['pub_p99_ms'],f['server_rss_max_mb']/pf['server_rss_max_mb']))
    print(' g %d/s peak %.1f idle %.1f cpu %.2f %%; pulsar %d topics rss %.0f'%(gg['topics_per_s'],gg['rss_peak_mb'],gg['rss_idle_mb'],gg['idle_cpu_pct'],pg['topics'],pg['rss_peak_mb']))
    print(' start %.1f ms; disk used at start %s'%(r['extra']['quire_start']['ready_ms_median'], r['extra'].get('disk_used_pct_at_start')))
