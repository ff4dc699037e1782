#!/bin/bash
# The third 2026-12-02 session's first call, on the tree as it is (00a9046: the GPU code of
# 051e77c; build-gpu for 90a-real, .deps carried):
#  - the closing figures of issue 6: bench at 1 and 4 requests (every mode, three repeats),
#    ops perf --op gemm (the GEMM goal by M), HF transformers on the same weights;
#  - the planned profile (results/h200-2026-12-02b/planned_script_c29.sh): ncu's warp-state
#    samples per SASS instruction of one one-row attention launch of a plain decode (kernels
#    serialised by ncu: read the stalls, not the time).
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c29.tgz -C /tmp r' EXIT
S=build-gpu/sparkgate
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > /tmp/r/gpu.txt 2>&1
$S fixture make --set qwen3-4b --out /tmp/q4b > /tmp/r/fixture.txt 2>&1 || exit 1; ts fixture
timeout 200 $S bench --backend cuda --fixture /tmp/q4b --concurrency 1,4 --modes plain,spec,hedge1,hedge2,hedge3 \
  --max-new 64 --repeat 3 --json /tmp/r/final_bench.json > /tmp/r/final_bench.txt 2>&1; ts "bench rc=$?"
grep -E '^ +[14] (plain|spec|hedge[123]) |bandwidth|  (plain|spec|verify|drafter|Markov|ladder)' /tmp/r/final_bench.txt | cut -c1-110
timeout 150 $S ops perf --op gemm --json /tmp/r/ops_perf_gemm.json > /tmp/r/ops_perf_gemm.txt 2>&1; ts "ops perf gemm rc=$?"
grep -A9 'GEMM goal' /tmp/r/ops_perf_gemm.txt
timeout 120 ncu --cache-control all --clock-control none -k regex:attention_k --launch-skip 40 --launch-count 1 \
  --section WarpStateStats --section SourceCounters --section LaunchStats --section Occupancy \
  -o /tmp/r/att_m1 $S generate --backend cuda --fixture /tmp/q4b --no-draft --max-new 3 --graphs off \
  > /tmp/r/ncu_run.txt 2>&1; ts "ncu rc=$?"
ncu --import /tmp/r/att_m1.ncu-rep --page details > /tmp/r/att_m1_details.txt 2>&1
ncu --import /tmp/r/att_m1.ncu-rep --page source --print-source sass --csv > /tmp/r/att_m1_sass.csv 2>&1
grep -iE 'stall|Warp Cycles|Duration|Registers' /tmp/r/att_m1_details.txt | head -30
timeout 200 python3 bench/hf_baseline.py /tmp/q4b/target --bench-json /tmp/r/final_bench.json --max-new 64 \
  > /tmp/r/hf_baseline.txt 2>&1; ts "hf rc=$?"; tail -n 5 /tmp/r/hf_baseline.txt
