import sys,subprocess,re
for label,runs in [("base",["tl4:s4","tl5:s5"]+["e1-base-%d:e1-base-%d"%(i,i) for i in (1,2,3)]+["e2-base-%d:e2-base-%d"%(i,i) for i in (1,2,3)]),
                   ("f15",["e1-f15-%d:e1-f15-%d"%(i,i) for i in (1,2,3)]),("f25",["e1-f25-%d:e1-f25-%d"%(i,i) for i in (1,2,3)]),
                   ("wb64",["e1-wb64-%d:e1-wb64-%d"%(i,i) for i in (1,2,3)]),("nice19",["e2-nice19-%d:e2-nice19-%d"%(i,i) for i in (1,2,3)]),("idle",["e2-idle-%d:e2-idle-%d"%(i,i) for i in (1,2,3)])]:
    tot={}; allp=[]
    for r in runs:
        c,s=r.split(':')
        sf = s+'.txt' if s.startswith('s') and not s.startswith('e') else s+'.samp'
        out=subprocess.run(["python3","classify.py",c+".csv",sf],capture_output=True,text=True).stdout
        for l in out.splitlines():
            m=re.match(r"(\S+)\s+slots\s+(\d+) adds\s+(\d+)\s+>1ms\s+(\d+).*>2ms\s+(\d+)",l)
            if m:
                t=tot.setdefault(m.group(1),[0,0,0,0])
                for i in range(4): t[i]+=int(m.group(i+2))
    adds=sum(t[1] for t in tot.values())
    print(label, len(runs), "runs:", "; ".join("%s %.0f%% of time, >1ms %.2f%%, >2ms %.2f%% of all adds"%(k,100*t[1]/adds,100*t[2]/adds,100*t[3]/adds) for k,t in sorted(tot.items())))
