#!/bin/bash
# c49, planned by the fifth 2026-12-02 session (attention's heads per block at two blocks an SM;
# an ncu profile of 72 attention launches of spec at 16 requests), with one addition first: c48's
# medians put the stored-score rule 2.6 % behind 8192 at 4 requests (plain 1215.8 -> 1184.0,
# spec 1499.1 -> 1459.9 tok/s), so the kernel timeline of plain and spec at 4 requests under both,
# to see which kernels lose the time. The results are tarred after every step.
# Build: build-gpu at main; carry .deps and build-gpu.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; tar czf $OUT/c49.tgz -C /tmp r; }
S=build-gpu/sparkgate
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || { ts "fixture failed"; exit 1; }; ts fixture
for k in 8192 rule; do
  if [ $k = rule ]; then E=""; else E="SG_CUDA_ATT_STORED_KEYS=$k"; fi
  for m in plain spec; do
    timeout 60 env $E CUDA_INJECTION64_PATH=$PWD/build-gpu/libsg_timeline.so $S bench --backend cuda \
      --fixture /tmp/q4b --concurrency 4 --modes $m --max-new 48 --repeat 1 > /tmp/r/timeline_4_${m}_$k.txt 2>&1
    ts "timeline 4 $m stored $k rc=$?"
    grep -E '^ +[0-9.]+ +[0-9.]+%' /tmp/r/timeline_4_${m}_$k.txt | head -6 | awk '{printf "  %s ms %s ln %s us/ln %s blocks %s\n", $1, $3, $4, $6, substr($8, 1, 60)}'
  done
done
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
timeout 240 ncu --cache-control all --clock-control none --csv --print-units base -k regex:attention_k \
  --launch-skip 400 --launch-count 72 --metrics $M $S bench --backend cuda --fixture /tmp/q4b \
  --concurrency 16 --modes spec --max-new 16 --repeat 1 --graphs off > /tmp/r/ncu_att.csv 2> /tmp/r/ncu_att.err
ts "ncu rc=$?"
python3 bench/results/h200-2026-12-01f/ncu_summary.py /tmp/r/ncu_att.csv > /tmp/r/ncu_att_summary.txt 2>&1
for f in sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active smsp__issue_active.avg.pct_of_peak_sustained_active; do
  grep "\"$f\"" /tmp/r/ncu_att.csv | awk -F'","' -v f=$f '{s += $NF; n++} END {if (n) printf "%s: mean %.1f over %d launches\n", f, s / n, n}'
done >> /tmp/r/ncu_att_summary.txt
ts summary; head -c 3000 /tmp/r/ncu_att_summary.txt
