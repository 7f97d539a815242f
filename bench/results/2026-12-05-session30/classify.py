# classify.py TL.csv SAMP.txt: adds over 1 and 2 ms by slot kind:
#   dev-slow: the device's mean write time in the slot > 0.15 ms (samp.py's diskstats)
#   flush: a flush was running at the slot's start (and the device not slow)
#   other
import csv,sys,bisect
rows=list(csv.DictReader(open(sys.argv[1])))
S=[[float(x) for x in l.split()] for l in open(sys.argv[2]).read().splitlines()[1:]]
ts=[r[0] for r in S]
def at(ms):
    i=bisect.bisect_right(ts,ms)-1
    return S[i] if i>=0 else None
tot={}; adds=0
for r in rows:
    m=int(r['mono_ms']); a=at(m); b=at(m+10)
    if not a or not b: continue
    wr=b[1]-a[1]; wt=b[2]-a[2]
    kind='dev-slow' if wr>0 and wt/wr>0.15 or wr<20 else ('flush' if r['flushing']=='1' else 'other')
    t=tot.setdefault(kind,[0,0,0,0]); t[0]+=1; t[1]+=int(r['adds']); t[2]+=int(r['over_1ms']); t[3]+=int(r['over_2ms'])
    adds+=int(r['adds'])
for k,t in sorted(tot.items()):
    print("%-9s slots %4d adds %6d  >1ms %6d (%.2f%% of all adds)  >2ms %6d (%.2f%%)"%(k,t[0],t[1],t[2],100*t[2]/adds,t[3],100*t[3]/adds))
print("all >2ms %.2f%%"%(100*sum(t[3] for t in tot.values())/adds))
