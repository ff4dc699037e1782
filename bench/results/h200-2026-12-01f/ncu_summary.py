import csv,collections,sys,io
txt=open(sys.argv[1]).read()
i=txt.index('"ID"')
rows=list(csv.DictReader(io.StringIO(txt[i:])))
k=collections.OrderedDict()
for r in rows:
    key=(r['ID'],r['Kernel Name'][:70])
    k.setdefault(key,{})[r['Metric Name']]=r['Metric Value'].replace(',','')
print(len(k),'launches')
g=collections.defaultdict(list)
for (i,n),m in k.items():
    g[(n,m['launch__grid_size'],m['launch__block_size'])].append(m)
stall=[f for f in next(iter(k.values())).keys() if 'stalled' in f]
for key,ms in sorted(g.items(), key=lambda x:-sum(float(m['gpu__time_duration.sum']) for m in x[1])):
    def avg(f): return sum(float(m[f]) for m in ms)/len(ms)
    print(f"{key[0][:60]:60s} grid {key[1]:>6} blk {key[2]:>4} n={len(ms):3d} t={avg('gpu__time_duration.sum')/1e3:7.1f}us regs {avg('launch__registers_per_thread'):4.0f} smem {avg('launch__shared_mem_per_block_dynamic')/1024:5.1f}K warps {avg('sm__warps_active.avg.pct_of_peak_sustained_active'):5.1f}% dram {avg('dram__throughput.avg.pct_of_peak_sustained_elapsed'):5.1f}% lts {avg('lts__throughput.avg.pct_of_peak_sustained_elapsed'):5.1f}% L2MB {avg('lts__t_bytes.sum')/1e6:6.1f} dramMB {avg('dram__bytes_read.sum')/1e6:6.1f} L1hit {avg('l1tex__t_sector_hit_rate.pct'):5.1f} hmma {avg('sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active'):5.1f} l1tp {avg('l1tex__throughput.avg.pct_of_peak_sustained_active'):5.1f} smemwf {avg('l1tex__data_pipe_lsu_wavefronts_mem_shared.sum')/1e6:5.2f}M")
    top=sorted(((avg(f),f) for f in stall), reverse=True)[:4]
    print("    stalls:", ", ".join(f"{f.replace('smsp__warp_issue_stalled_','').replace('_per_warp_active.pct','')} {v:.0f}" for v,f in top))
