#!/bin/bash
# ncu of gemm_split / gemm_band at 8 and 32 rows, tree vs the bound build (x and weights from L1/L2)
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p $OUT/r; trap 'cd $OUT && tar czf r.tgz r && rm -rf r' EXIT
S=build-gpu/sparkgate
t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { case $1 in base) echo "$S";; *) echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate";; esac; }
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,sm__warps_active.avg.pct_of_peak_sustained_active,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__throughput.avg.pct_of_peak_sustained_active,lts__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,l1tex__t_sector_hit_rate.pct,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_per_inst_issued.ratio,regex:smsp__warp_issue_stalled_.*_per_warp_active.pct
for t in base bothfree; do for w in down_proj o_proj q_proj gate_proj; do for m in 8 32; do
  timeout 60 $(which ncu) --cache-control all --clock-control none --csv --print-units base -k regex:"gemm_(split|band)" --launch-skip 3 --launch-count 1 --metrics $M $(bin $t) ops perf --op gemm --weight $w --rows $m > $OUT/r/ncu_${t}_${w}_$m.csv 2>&1; ts "$t $w $m rc=$?"
done; done; done
