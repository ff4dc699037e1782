#!/bin/bash
# Planned, not run (after c48): attention at the new occupancy (two blocks an SM since 6eba56b).
# 1. Heads per block again: att_teams' rule (2 below 32 rows, 4 from 32) was fitted when a block
#    had an SM to itself; SG_CUDA_ATT_TEAMS = 0 (the rule), 1, 2, 4 at 4, 16 and 64 requests.
# 2. What bounds it now: ncu on 72 attention launches of spec at 16 requests (verifies of about
#    128 rows and the drafter's), the metrics of bench/README.md's verify profile plus the FMA
#    pipe's and the issue slots' use, summarised per grid by ncu_summary.py.
# Build: build-gpu at main; carry .deps and build-gpu.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c49.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
A="bench --backend cuda --fixture /tmp/q4b --concurrency 4,16,64 --modes plain,spec,hedge3 --max-new 48 --repeat 1"
for t in 0 1 2 4; do
  timeout 100 env SG_CUDA_ATT_TEAMS=$t $S $A > /tmp/r/bench_teams$t.txt 2>&1; ts "bench teams $t rc=$?"
  grep -E '^ +(4|16|64) (plain|spec|hedge3) ' /tmp/r/bench_teams$t.txt | awk '{printf "  %s %s %s verify %s\n", $1, $2, $3, $11}'
done
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__registers_per_thread,\
launch__shared_mem_per_block_dynamic,sm__warps_active.avg.pct_of_peak_sustained_active,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__throughput.avg.pct_of_peak_sustained_elapsed,\
lts__t_bytes.sum,dram__bytes_read.sum,l1tex__t_sector_hit_rate.pct,\
l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_active.avg,\
gpc__cycles_elapsed.max,l1tex__throughput.avg.pct_of_peak_sustained_active,\
sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active,\
smsp__issue_active.avg.pct_of_peak_sustained_active,\
regex:smsp__warp_issue_stalled_.*_per_warp_active.pct
timeout 400 ncu --cache-control all --clock-control none --csv --print-units base -k regex:attention_k \
  --launch-skip 400 --launch-count 72 --metrics $M $S bench --backend cuda --fixture /tmp/q4b \
  --concurrency 16 --modes spec --max-new 16 --repeat 1 --graphs off > /tmp/r/ncu_att.csv 2> /tmp/r/ncu_att.err
ts "ncu rc=$?"
python3 bench/results/h200-2026-12-01f/ncu_summary.py /tmp/r/ncu_att.csv | tee /tmp/r/ncu_att_summary.txt
for f in sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active smsp__issue_active.avg.pct_of_peak_sustained_active; do
  grep "\"$f\"" /tmp/r/ncu_att.csv | awk -F'","' -v f=$f '{s += $NF; n++} END {if (n) printf "%s: mean %.1f over %d launches\n", f, s / n, n}'
done | tee -a /tmp/r/ncu_att_summary.txt
