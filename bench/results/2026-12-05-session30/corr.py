import csv,sys
rows=list(csv.DictReader(open(sys.argv[1])))
S=[[float(x) for x in l.split()] for l in open(sys.argv[2]).read().splitlines()[1:]]
thr=int(sys.argv[3]) if len(sys.argv)>3 else 150
import bisect
ts=[r[0] for r in S]
def at(ms):
    i=bisect.bisect_right(ts,ms)-1
    return S[i] if i>=0 else None
def show(r):
    m=int(r['mono_ms']); a=at(m); b=at(m+10)
    if not a or not b: return
    d=[b[i]-a[i] for i in range(len(a))]
    print("%5s max %5s >1ms %3s wc %5.1f | wr %3d (%4.2f ms) infl %2d disc %d fl %d (%4.2f ms) dirty %d wb %d steal %d %d"%(r['ms'],r['max_us'],r['over_1ms'],int(r['write_cache_bytes'])/1048576,d[1],d[2]/max(d[1],1),b[3],d[4],d[6],d[7]/max(d[6],1),b[8],b[9],d[10],d[11]))
for i,r in enumerate(rows):
    if int(r['over_1ms'])>thr:
        show(r)
if len(sys.argv)>4:
    print("--- quiet sample")
    for r in rows[100:110]: show(r)
