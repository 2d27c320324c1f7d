# What nginx saw, from run.sh's access log ($msec $remote_addr $server_port $status $request_uri): requests, 429s,
# the share of the hidden limit (argument 2, per address per host) used from 10 s on, admitted and 429s per second.
import sys, collections
rows=[l.split() for l in open(sys.argv[1]) if l.strip()]
hidden=float(sys.argv[2]) if len(sys.argv)>2 else 20
rows=[(float(r[0]),r[1],r[2],int(r[3]),r[4]) for r in rows]
t0=rows[0][0]; end=rows[-1][0]
pairs=sorted({(r[1],r[2]) for r in rows})
ok=collections.Counter(); tm=collections.Counter()
for t,a,p,s,u in rows:
    w=int(t-t0)
    if s==200: ok[w]+=1
    elif s==429: tm[w]+=1
other=sum(1 for r in rows if r[3] not in (200,429))
W=int(end-t0)  # last window partial
fleet=hidden*len(pairs)
per=[ok[w] for w in range(W)]
steady=per[10:W] if W>11 else per[W//2:W]
share=sum(steady)/(len(steady)*fleet) if steady else 0
n429=sum(1 for r in rows if r[3]==429)
late429=sum(1 for r in rows if r[3]==429 and r[0]-t0>=10)
lateall=sum(1 for r in rows if r[0]-t0>=10)
inrow=0;to90=-1
for w in range(W):
    inrow=inrow+1 if per[w]>=0.9*fleet else 0
    if inrow==3: to90=w+1;break
print(f"{len(rows)} requests, {other} neither 200 nor 429, {n429} x429 ({100*n429/len(rows):.1f} %), {end-t0:.1f} s, pairs {len(pairs)}, fleet hidden {fleet:.0f}/s")
print(f"used after 10 s: {100*share:.0f} %; 429 share after 10 s: {100*late429/max(1,lateall):.1f} %; 90 % for 3 s reached at {to90} s")
print("admitted per second:", per)
print("429s per second:", [tm[w] for w in range(W+1)])
