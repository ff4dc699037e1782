#!/bin/bash
# down/fc at 17-32 rows (K > 4096): 32 x 8 tiles (head, a1eac2a) vs 16 x 16 row tiles (v1) vs
# 16 x 8 row tiles (v3): bits, ops perf, ncu of head's 32-row products, decode A/B.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
bin() { echo "env LD_LIBRARY_PATH=$PWD/exp/$1:$LD_LIBRARY_PATH exp/$1/sparkgate"; }
trap 'tar czf $OUT/c16.tgz -C /tmp r' EXIT
for v in v1 v3; do $(bin $v) ops check --op gemm > /tmp/r/check_${v}_gemm.txt 2>&1; ts "check $v rc=$? $(tail -n 1 /tmp/r/check_${v}_gemm.txt)"; done
for v in head v1 v3; do
  $(bin $v) ops perf --op gemm --weight down_proj,fc --rows 17,24,32 > /tmp/r/perf_$v.txt 2>&1; ts "perf $v"
  awk '/^weight/{f=1;next} f&&NF==9{printf "  %s %s %s (cuBLAS %s)\n", $1, $2, $5, $8}' /tmp/r/perf_$v.txt
done
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,sm__warps_active.avg.pct_of_peak_sustained_active,sm__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,regex:smsp__warp_issue_stalled_.*_per_warp_active.pct
for w in o_proj q_proj down_proj; do
  timeout 60 $(which ncu) --cache-control all --clock-control none --csv --print-units base -k regex:"gemm_(split|band)" --launch-skip 3 --launch-count 1 --metrics $M $(bin head) ops perf --op gemm --weight $w --rows 32 > /tmp/r/ncu_head_${w}_32.csv 2>&1; ts "ncu $w rc=$?"
done
build-gpu/sparkgate fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes spec,hedge3 --max-new 48 --repeat 2"
for rep in 1 2; do for v in head v1 v3; do
  $(bin $v) $A > /tmp/r/bench_${v}_$rep.txt 2>&1; ts "bench $v $rep rc=$?"
  grep -E '^ +[14] (spec|hedge3) ' /tmp/r/bench_${v}_$rep.txt | awk '{printf "  %s %s %s verify %s drafter %s\n", $1, $2, $3, $11, $15}'
done; done
