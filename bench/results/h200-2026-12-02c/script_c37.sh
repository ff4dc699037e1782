#!/bin/bash
# The prototype wgmma kernel (wgmma_fold_gemm.cu) with a fourth variant: gemm.cu's own k-step
# order (no contract change), its operands placed into the k-steps by 8-byte cp.async copies; its
# bits against an mma.sync chain of gemm.cu's order, its time beside the natural-order variants
# (c35's three, rerun) and cuBLAS.
mkdir -p /tmp/r; trap 'tar czf $OUT/c37.tgz -C /tmp r' EXIT
B=bench/results/h200-2026-12-02c
nvcc -gencode arch=compute_90a,code=sm_90a -std=c++17 -O2 -Xptxas -v $B/wgmma_fold_gemm.cu -lcublas \
  -o /tmp/wf > /tmp/r/build.txt 2>&1 || { tail -5 /tmp/r/build.txt; exit 1; }
grep -E 'registers|spill' /tmp/r/build.txt
timeout 240 /tmp/wf 2>&1 | tee /tmp/r/wgmma_fold_gemm.txt
