# Prints the table of decision 0008 from two poolbench results files:
#   python3 docs/decisions/data/0008-summary.py BEFORE.json AFTER.json
# Medians over the rounds; p99 is the worst goroutine's.
import json,sys,statistics as st
def load(f):
    d=json.load(open(f)); out={}
    for c in d['cases']:
        for k in c['contenders']:
            rs=k['rounds']
            ns=st.median([r['wall_ns']/r['ops'] for r in rs])
            out[(c['name'].replace('Pool/Oversubscribed/',''),k['name'])]=(1e3/ns, st.median([r['jain'] for r in rs]), st.median([r['min_worker_ops']/max(r['max_worker_ops'],1) for r in rs]), st.median([r['latency']['p99_ns'] for r in rs])/1e3)
    return out
b=load(sys.argv[1]); a=load(sys.argv[2])
cases=[]
for (c,k) in a:
    if c not in cases: cases.append(c)
print("| cell | contender | M ops/s | Jain | min/max | worst p99 (µs) |")
print("|---|---|---|---|---|---|")
for c in cases:
    for tag,src,k in [("before",b,"poolkit"),("after",a,"poolkit"),("",a,"chan"),("",a,"mutex"),("",a,"puddle")]:
        v=src[(c,k)]
        name=f"poolkit {tag}" if tag else k
        print(f"| {c} | {name} | {v[0]:.2f} | {v[1]:.2f} | {v[2]:.2f} | {v[3]:.1f} |")
