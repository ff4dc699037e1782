#!/bin/bash
# A prototype wgmma kernel of the natural k-step order (wgmma_fold_gemm.cu): its bits against
# mma.sync chains of the same order, its time against cuBLAS, at Qwen3-4B shapes and 128-2048 rows.
mkdir -p /tmp/r; trap 'tar czf $OUT/c34.tgz -C /tmp r' EXIT
B=bench/results/h200-2026-12-02c
nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -O2 -Xptxas -v $B/wgmma_fold_gemm.cu -lcublas \
  -o /tmp/wf > /tmp/r/build.txt 2>&1 || { tail -5 /tmp/r/build.txt; exit 1; }
grep -E 'registers|spill' /tmp/r/build.txt
timeout 240 /tmp/wf 2>&1 | tee /tmp/r/wgmma_fold_gemm.txt
