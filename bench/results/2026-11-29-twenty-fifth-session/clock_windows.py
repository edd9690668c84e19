import re,sys,datetime,collections,statistics
d=sys.argv[1]
def rows(n):
    out=[]
    txt=open(f"{d}/measurements{n}.csv").read()
    for m in re.finditer(r"^(\d{10}),([0-9a-f]{32}),(ok [0-9.]+|failed[^,]*),", txt, re.M):
        out.append((int(m.group(1)),m.group(2),m.group(3)))
    return out
r1,r2=rows(1),rows(2)
a={k:(t,float(v[3:])) for t,k,v in r1 if v.startswith("ok")}
b={k:(t,float(v[3:])) for t,k,v in r2 if v.startswith("ok")}
clk=collections.defaultdict(list)
for line in open(f"{d}/clocks.csv"):
    f=[x.strip() for x in line.split(",")]
    try:
        ts=datetime.datetime.strptime(f[0],"%Y/%m/%d %H:%M:%S.%f").replace(tzinfo=datetime.timezone.utc).timestamp()
        clk[int(ts)].append((int(f[1].split()[0]), f[4]))
    except Exception as e: pass
for run,(x,y) in ((1,(a,b)),(2,(b,a))):
    per=collections.defaultdict(list)
    for k,(t,ms) in x.items():
        if k in y: per[t].append(ms/y[k][1])
    print("run",run)
    for t in sorted(per):
        c=clk.get(t,[]); cs=sorted(v for v,_ in c)
        reasons=collections.Counter(r for _,r in c).most_common(2)
        print(f"  {datetime.datetime.utcfromtimestamp(t).strftime('%H:%M:%S')} edges {len(per[t]):3d} ratio(this/other) med {statistics.median(per[t]):.3f} max {max(per[t]):.3f}  clock min {cs[0] if cs else '-'} med {cs[len(cs)//2] if cs else '-'} {reasons}")
