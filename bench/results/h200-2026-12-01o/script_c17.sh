#!/bin/bash
# Warps per block for the one-set 16-column tiles (a1eac2a): the tree's choice vs forced 4/6/8, ops perf at 12-32 rows.
export LD_LIBRARY_PATH=$PWD/.deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64
mkdir -p /tmp/r; t0=$(date +%s); ts() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
trap 'tar czf $OUT/c17.tgz -C /tmp r' EXIT
for rep in 1 2; do for w in 0 4 6 8; do
  SG_CUDA_GEMM_SPLIT_WARPS=$w build-gpu/sparkgate ops perf --op gemm --weight q_proj,k_proj,o_proj,gate_proj,lm_head --rows 12,16,24,32 > /tmp/r/perf_w${w}_$rep.txt 2>&1; ts "w=$w rc=$?"
done; done
