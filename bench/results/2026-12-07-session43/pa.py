import sys
pre=sys.argv[1]; lo=float(sys.argv[2]); hi=float(sys.argv[3])
J=[list(map(int,l.split())) for l in open(pre+'.journal')]
D=[list(map(int,l.split())) for l in open(pre+'.direct')]
t0=J[0][0]
J=[r for r in J if lo<= (r[0]-t0)/1e6 < hi]
D=[r for r in D if lo<= (r[0]-t0)/1e6 < hi]
def pct(v,q):
    v=sorted(v); return v[min(len(v)-1,int(q*len(v)))]/1e3
def show(name,v):
    print("%-12s n %5d p50 %.3f p90 %.3f p99 %.3f max %.3f"%(name,len(v),pct(v,.5),pct(v,.9),pct(v,.99),max(v)/1e3))
show("j write",[r[1]-r[0] for r in J])
show("j sync",[r[2]-r[1] for r in J])
show("d write",[r[1]-r[0] for r in D])
show("d sync",[r[2]-r[1] for r in D])
show("d total",[r[2]-r[0] for r in D])
# gap between groups (journal thread idle between end of one and start of next)
